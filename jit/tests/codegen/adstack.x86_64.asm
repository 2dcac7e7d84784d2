=== plain
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 110 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %r11
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%r11, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%r11, %rcx)
  leaq 1(%rax), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movq %rax, <offset:1>+(%rsp)
  movsd -8(%r11, %rcx), %xmm0
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== dict recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 110 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %r11
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%r11, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%r11, %rcx)
  leaq 1(%rax), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movq %rax, <offset:1>+(%rsp)
  movsd -8(%r11, %rcx), %xmm0
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== bounds recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 110 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %r11
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%r11, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%r11, %rcx)
  leaq 1(%rax), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movq %rax, <offset:1>+(%rsp)
  movsd -8(%r11, %rcx), %xmm0
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 110 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %r11
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%r11, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%r11, %rcx)
  leaq 1(%rax), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movq %rax, <offset:1>+(%rsp)
  movsd -8(%r11, %rcx), %xmm0
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 110 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %r11
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rax
  movq %rax, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%r11, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%r11, %rcx)
  leaq 1(%rax), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movq %rax, <offset:1>+(%rsp)
  movsd -8(%r11, %rcx), %xmm0
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== adstack abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 207 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %rax
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rcx
  testq %rcx, %rcx
  jnz     label5; j label4
block4:
  movq %rcx, %rdx
  shlq $0x4, %rdx
  movsd %xmm0, 8(%rax, %rdx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%rax, %rdx)
  leaq 1(%rcx), %rcx
  movq %rcx, <offset:1>+(%rsp)
  jmp     label6
block6:
  movq <offset:1>+(%rsp), %rcx
  leaq -1(%rcx), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movl $0x1, %edx
  cmpq $0x1, %rcx
  jz      label8; j label7
block7:
  leaq -1(%rcx), %rcx
  shlq $0x4, %rcx
  movsd -8(%rax, %rcx), %xmm0
  jmp     label9
block9:
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block5:
  movl $0x1, %esi
  movl $0x1, %edx
  movq %rsi, %rdi
  call    User(userextname0)
  jmp     label6
block8:
  movl $0x3, %edi
  movl $0x2, %esi
  leaq -1(%rcx), %rcx
  call    User(userextname0)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  jmp     label9
=== all abort
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 207 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %rax
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rcx
  testq %rcx, %rcx
  jnz     label5; j label4
block4:
  movq %rcx, %rdx
  shlq $0x4, %rdx
  movsd %xmm0, 8(%rax, %rdx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%rax, %rdx)
  leaq 1(%rcx), %rcx
  movq %rcx, <offset:1>+(%rsp)
  jmp     label6
block6:
  movq <offset:1>+(%rsp), %rcx
  leaq -1(%rcx), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movl $0x1, %edx
  cmpq $0x1, %rcx
  jz      label8; j label7
block7:
  leaq -1(%rcx), %rcx
  shlq $0x4, %rcx
  movsd -8(%rax, %rcx), %xmm0
  jmp     label9
block9:
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block5:
  movl $0x1, %esi
  movl $0x1, %edx
  movq %rsi, %rdi
  call    User(userextname0)
  jmp     label6
block8:
  movl $0x3, %edi
  movl $0x2, %esi
  leaq -1(%rcx), %rcx
  call    User(userextname0)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  jmp     label9
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 207 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %rax
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rcx
  testq %rcx, %rcx
  jnz     label5; j label4
block4:
  movq %rcx, %rdx
  shlq $0x4, %rdx
  movsd %xmm0, 8(%rax, %rdx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%rax, %rdx)
  leaq 1(%rcx), %rcx
  movq %rcx, <offset:1>+(%rsp)
  jmp     label6
block6:
  movq <offset:1>+(%rsp), %rcx
  leaq -1(%rcx), %rdx
  movq %rdx, <offset:1>+(%rsp)
  movl $0x1, %edx
  cmpq $0x1, %rcx
  jz      label8; j label7
block7:
  leaq -1(%rcx), %rcx
  shlq $0x4, %rcx
  movsd -8(%rax, %rcx), %xmm0
  jmp     label9
block9:
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block5:
  movl $0x1, %esi
  movl $0x1, %edx
  movq %rsi, %rdi
  call    User(userextname0)
  jmp     label6
block8:
  movl $0x3, %edi
  movl $0x2, %esi
  leaq -1(%rcx), %rcx
  call    User(userextname0)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  jmp     label9
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@ad:  ; 165 bytes
; userextname0 = u0:1 = stub(preserve_all): trap scratch hand-off
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x20, %rsp
block0:
  leaq <offset:1>+(%rsp), %rax
  movq $0x0, <offset:1>+(%rsp)
  testq %rdi, %rdi
  jnz     label2; j label1
block1:
  jmp     label3
block2:
  movsd %xmm0, <offset:1>+8(%rsp)
  uninit  %xmm1
  xorpd %xmm1, %xmm1
  movsd %xmm1, <offset:1>+0x10(%rsp)
  movq $0x1, <offset:1>+(%rsp)
  jmp     label3
block3:
  movq <offset:1>+(%rsp), %rdx
  testq %rdx, %rdx
  jnz     label9; j label4
block4:
  movq %rdx, %rcx
  shlq $0x4, %rcx
  movsd %xmm0, 8(%rax, %rcx)
  uninit  %xmm0
  xorpd %xmm0, %xmm0
  movsd %xmm0, 0x10(%rax, %rcx)
  movl $0x1, %esi
  leaq 1(%rdx), %rdi
  movq %rdi, <offset:1>+(%rsp)
  jmp     label5
block5:
  movq %rdx, <offset:1>+(%rsp)
  testq %rdx, %rdx
  jz      label8; j label6
block6:
  movsd -8(%rax, %rcx), %xmm0
  jmp     label7
block7:
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block8:
  movl $0x4, %edi
  uninit  %rcx
  xorq %rcx, %rcx
  call    User(userextname0)
  ud2
block9:
  movl $0x2, %edi
  movl $0x1, %esi
  uninit  %rcx
  xorq %rcx, %rcx
  call    User(userextname0)
  ud2
