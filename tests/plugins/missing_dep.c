/* The dependency of librlx-backend-missingdep.so; built away from the plugin's rpath so that the
 * OS loader cannot find it and dlopen fails with its own message. */
int rlx_test_missing_dependency(void) { return 1; }
