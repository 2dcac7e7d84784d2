=== plain
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm7
  xorpd %xmm7, %xmm7
  movsd %xmm7, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== dict recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm7
  xorpd %xmm7, %xmm7
  movsd %xmm7, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== bounds recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm7
  xorpd %xmm7, %xmm7
  movsd %xmm7, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm7
  xorpd %xmm7, %xmm7
  movsd %xmm7, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm7
  xorpd %xmm7, %xmm7
  movsd %xmm7, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== adstack abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 82 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %r8
  movq $0x0, <offset:1>+(%rsp)
  jmp     label1
block1:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label2
block2:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd -8(%r8, %rcx), %xmm0
  leaq -1(%rax), %rax
  movq %rax, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== all abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 82 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %r8
  movq $0x0, <offset:1>+(%rsp)
  jmp     label1
block1:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label2
block2:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd -8(%r8, %rcx), %xmm0
  leaq -1(%rax), %rax
  movq %rax, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 82 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %r8
  movq $0x0, <offset:1>+(%rsp)
  jmp     label1
block1:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label2
block2:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd -8(%r8, %rcx), %xmm0
  leaq -1(%rax), %rax
  movq %rax, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 66 bytes
; userextname0 = u0:1 = stub(preserve_all): trap scratch hand-off
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x50, %rsp
block0:
  leaq <offset:1>+(%rsp), %rsi
  movq $0x0, <offset:1>+(%rsp)
  jmp     label1
block1:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label2
block2:
  movsd 8(%rsi), %xmm0
  movq $0x0, <offset:1>+(%rsp)
  addq $0x50, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
