// Shared by every rlx vulkan kernel: the push-constant block (64 bytes; kernels.h's Push must
// match it field for field) and the grid-stride helpers.
//
// Descriptor set 0 is the same for every kernel: bindings 0..2 are inputs 0..2, binding 3 is the
// output, binding 4 is the program's error word, binding 5 is input 3 (attention's positions). Each binding is a whole VkBuffer; where a tensor
// starts inside it is an element offset here (o_in*, o_out), so one layout and one set per node
// serve any arena offset or slot binding offset without descriptor offset-alignment rules.
layout(push_constant) uniform Push {
  uint o_in0, o_in1, o_in2, o_out;  // element offsets into bindings 0, 1, 2, 3
  uint n;      // elements (elementwise), or rows
  uint nb;     // broadcast length of input 1 (add / mul), or rows of a table (embed)
  uint cols;   // last dim (norm, softmax, embed d), or n (matmul)
  uint k;      // matmul inner dim
  uint mode;   // kernel variant (see each shader)
  uint node;   // node index, for the error word
  float f0;    // scale, or eps
  uint u0;     // per kernel (rope: high word of the double frequency step, with f0's bits)
  uint o_in3;  // element offset into binding 5
  uint u1, u2; // per kernel (attention: hkv, kv_len / past)
  uint u3;
} p;
