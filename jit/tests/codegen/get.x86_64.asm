=== plain
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 43 bytes
; userextname0 = u0:1 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq -0x18(%rdi), %r8
  testq $0x1, %r8
  jnz     label2; j label1
block2:
  movq 1(%r8), %rax
  jmp     label3
block3:
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname0)
  jmp     label3
=== dict recover
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 80 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_dict
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq -0x18(%rdi), %rdx
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label2; j label1
block1:
  movq 1(%rdx), %rax
  jmp     label5
block5:
  movq %rbp, %rsp
  popq %rbp
  retq
block2:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label4; j label3
block3:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname1)
  jmp     label5
block4:
  movq %rdi, %rsi
  uninit  %rdi
  xorl %edi, %edi
  call    User(userextname0)
  uninit  %rax
  xorq %rax, %rax
  jmp     label5
=== bounds recover
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 108 bytes
; userextname0 = u0:1 = stub -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r13, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p13i }
block0:
  movq -0x18(%rdi), %r13
  testq $0x1, %r13
  jnz     label2; j label1
block2:
  movq %rdi, %rsi
  uninit  %rdi
  xorl %edi, %edi
  leaq 1(%r13), %rdx
  uninit  %rax
  xorq %rax, %rax
  movq %rax, %rbx
  movq %rbx, %rcx
  call    User(userextname0)
  testb %al, %al
  jnz     label4; j label3
block4:
  movq 1(%r13), %rax
  jmp     label5
block5:
  movq (%rsp), %rbx
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname1)
  jmp     label5
block3:
  movq %rbx, %rax
  jmp     label5
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 120 bytes
; userextname0 = u0:1 = stub -> gl_check_live
; userextname1 = u0:2 = stub -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
block0:
  movq %rdi, %rbx
  uninit  %rsi
  xorl %esi, %esi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %rbx, %rdi
  movq -0x18(%rdi), %rbx
  testq $0x1, %rbx
  jnz     label4; j label3
block4:
  leaq -7(%rbx), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname1)
  testb %al, %al
  jnz     label6; j label5
block6:
  jmp     label7
block7:
  movq 1(%rbx), %rax
  jmp     label8
block8:
  movq (%rsp), %rbx
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rax
  xorq %rax, %rax
  jmp     label8
block3:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname2)
  jmp     label8
block5:
  uninit  %rax
  xorq %rax, %rax
  jmp     label8
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 85 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %r12, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p12i }
block0:
  movq %rdi, %r12
  load_ext_name userextname0+0, %rdi
  load_ext_name userextname1+0, %r9
  movq %r12, %rsi
  call    *%r9
  movq %r12, %rdi
  movq -0x18(%rdi), %r10
  testq $0x1, %r10
  jnz     label2; j label1
block2:
  movq 1(%r10), %rax
  jmp     label3
block3:
  movq (%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname2)
  jmp     label3
=== adstack abort
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 43 bytes
; userextname0 = u0:1 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq -0x18(%rdi), %r8
  testq $0x1, %r8
  jnz     label2; j label1
block2:
  movq 1(%r8), %rax
  jmp     label3
block3:
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rsi
  xorq %rsi, %rsi
  call    User(userextname0)
  jmp     label3
=== all abort
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 228 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
block0:
  movq %rdi, %rbx
  load_ext_name userextname0+0, %rdi
  load_ext_name userextname1+0, %rax
  movq %rbx, %rsi
  call    *%rax
  uninit  %rsi
  xorl %esi, %esi
  movq %rbx, %rdi
  call    User(userextname2)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rbx), %rdx
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r12, %rdx
  movq 1(%rdx), %rax
  jmp     label12
block12:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r12, %rax
  leaq 1(%rax), %rdx
  uninit  %rcx
  xorq %rcx, %rcx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label11; j label10
block10:
  uninit  %rsi
  xorq %rsi, %rsi
  movq %rbx, %rdi
  call    User(userextname6)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %rbx, %rsi
  call    User(userextname3)
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 228 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
block0:
  movq %rdi, %rbx
  load_ext_name userextname0+0, %rdi
  load_ext_name userextname1+0, %rax
  movq %rbx, %rsi
  call    *%rax
  uninit  %rsi
  xorl %esi, %esi
  movq %rbx, %rdi
  call    User(userextname2)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rbx), %rdx
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r12, %rdx
  movq 1(%rdx), %rax
  jmp     label12
block12:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r12, %rax
  leaq 1(%rax), %rdx
  uninit  %rcx
  xorq %rcx, %rcx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label11; j label10
block10:
  uninit  %rsi
  xorq %rsi, %rsi
  movq %rbx, %rdi
  call    User(userextname6)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %rbx, %rsi
  call    User(userextname3)
  uninit  %rax
  xorq %rax, %rax
  jmp     label12
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@get:  ; 228 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
block0:
  movq %rdi, %rbx
  load_ext_name userextname0+0, %rdi
  load_ext_name userextname1+0, %rax
  movq %rbx, %rsi
  call    *%rax
  uninit  %rsi
  xorl %esi, %esi
  movq %rbx, %rdi
  call    User(userextname2)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rbx), %rdx
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r12, %rdx
  movq 1(%rdx), %rax
  jmp     label11
block11:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  uninit  %rax
  xorq %rax, %rax
  jmp     label11
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r12, %rax
  leaq 1(%rax), %rdx
  uninit  %rcx
  xorq %rcx, %rcx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  uninit  %rax
  xorq %rax, %rax
  jmp     label11
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label12; j label10
block10:
  uninit  %rsi
  xorq %rsi, %rsi
  movq %rbx, %rdi
  call    User(userextname6)
  jmp     label11
block12:
  movl $0x1, %edi
  uninit  %rcx
  xorq %rcx, %rcx
  movq %rbx, %rsi
  call    User(userextname3)
  ud2
