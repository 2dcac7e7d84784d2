=== plain
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 48 bytes
; userextname0 = u0:1 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq %rsi, %rdx
  movq -0x18(%rdi), %rsi
  testq $0x1, %rsi
  jnz     label2; j label1
block2:
  movq %rdx, 0x11(%rsi)
  jmp     label3
block3:
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  call    User(userextname0)
  jmp     label3
=== dict recover
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 86 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_dict
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq -0x18(%rdi), %rdx
  leaq 1(%rdx), %r8
  testq $0x7, %r8
  jnz     label2; j label1
block1:
  movq %rsi, 0x11(%rdx)
  jmp     label5
block5:
  movq %rbp, %rsp
  popq %rbp
  retq
block2:
  movq %rsi, %r11
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label4; j label3
block3:
  movl $0x2, %esi
  movq %r11, %rdx
  call    User(userextname1)
  jmp     label5
block4:
  movq %rdi, %rsi
  uninit  %rdi
  xorl %edi, %edi
  call    User(userextname0)
  jmp     label5
=== bounds recover
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 109 bytes
; userextname0 = u0:1 = stub -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %r12, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p12i }
  movq %r13, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p13i }
block0:
  movq %rsi, %r13
  movq -0x18(%rdi), %r12
  testq $0x1, %r12
  jnz     label2; j label1
block2:
  movq %rdi, %rsi
  uninit  %rdi
  xorl %edi, %edi
  leaq 1(%r12), %rdx
  movl $0x2, %ecx
  call    User(userextname0)
  testb %al, %al
  jnz     label4; j label3
block4:
  movq %r13, %rdx
  movq %rdx, 0x11(%r12)
  jmp     label5
block5:
  movq (%rsp), %r12
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  movq %r13, %rdx
  call    User(userextname1)
  jmp     label5
block3:
  jmp     label5
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 130 bytes
; userextname0 = u0:1 = stub -> gl_check_live
; userextname1 = u0:2 = stub -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %r13, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p13i }
  movq %r15, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p15i }
block0:
  movq %rsi, %r13
  movq %rdi, %r15
  uninit  %rsi
  xorl %esi, %esi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %r15, %rdi
  movq -0x18(%rdi), %r15
  testq $0x1, %r15
  jnz     label4; j label3
block4:
  leaq -7(%r15), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname1)
  testb %al, %al
  jnz     label6; j label5
block6:
  jmp     label7
block7:
  movq %r13, %rdx
  movq %rdx, 0x11(%r15)
  jmp     label8
block8:
  movq (%rsp), %r13
  movq 8(%rsp), %r15
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label8
block3:
  movl $0x2, %esi
  movq %r13, %rdx
  call    User(userextname2)
  jmp     label8
block5:
  jmp     label8
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 106 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  subq $0x10, %rsp
  movq %r12, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p12i }
  movq %r13, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p13i }
block0:
  movq %rsi, %r12
  movq %rdi, %r13
  load_ext_name userextname0+0, %rdi
  load_ext_name userextname1+0, %r8
  movq %r13, %rsi
  call    *%r8
  movq %r13, %rdi
  movq -0x18(%rdi), %r8
  testq $0x1, %r8
  jnz     label2; j label1
block2:
  movq %r12, %rdx
  movq %rdx, 0x11(%r8)
  jmp     label3
block3:
  movq (%rsp), %r12
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  movq %r12, %rdx
  call    User(userextname2)
  jmp     label3
=== adstack abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 48 bytes
; userextname0 = u0:1 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq %rsi, %rdx
  movq -0x18(%rdi), %rsi
  testq $0x1, %rsi
  jnz     label2; j label1
block2:
  movq %rdx, 0x11(%rsi)
  jmp     label3
block3:
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  call    User(userextname0)
  jmp     label3
=== all abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 242 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  subq $0x20, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
  movq %r13, 0x10(%rsp)
  unwind SaveReg { clobber_offset: 16, reg: p13i }
block0:
  movq %rdi, %rbx
  movq %rsi, %r12
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
  movq %rdx, %r13
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r13, %rdx
  movq %r12, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label12
block12:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  movq 0x10(%rsp), %r13
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label12
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r13, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  jmp     label12
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label11; j label10
block10:
  movl $0x2, %esi
  movq %r12, %rdx
  movq %rbx, %rdi
  call    User(userextname6)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %rbx, %rsi
  call    User(userextname3)
  jmp     label12
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 242 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  subq $0x20, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
  movq %r13, 0x10(%rsp)
  unwind SaveReg { clobber_offset: 16, reg: p13i }
block0:
  movq %rdi, %rbx
  movq %rsi, %r12
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
  movq %rdx, %r13
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r13, %rdx
  movq %r12, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label12
block12:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  movq 0x10(%rsp), %r13
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label12
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r13, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  jmp     label12
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label11; j label10
block10:
  movl $0x2, %esi
  movq %r12, %rdx
  movq %rbx, %rdi
  call    User(userextname6)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %rbx, %rsi
  call    User(userextname3)
  jmp     label12
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 245 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  subq $0x20, %rsp
  movq %rbx, (%rsp)
  unwind SaveReg { clobber_offset: 0, reg: p3i }
  movq %r12, 8(%rsp)
  unwind SaveReg { clobber_offset: 8, reg: p12i }
  movq %r13, 0x10(%rsp)
  unwind SaveReg { clobber_offset: 16, reg: p13i }
block0:
  movq %rdi, %rbx
  movq %rsi, %r12
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
  movq %rdx, %r13
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname4)
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r13, %rdx
  movq %r12, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label11
block11:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  movq 0x10(%rsp), %r13
  addq $0x20, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label11
block4:
  jmp     label7
block5:
  uninit  %rdi
  xorl %edi, %edi
  movq %r13, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %rbx, %rsi
  call    User(userextname5)
  testb %al, %al
  jnz     label8; j label6
block6:
  jmp     label7
block7:
  jmp     label11
block9:
  leaq 1(%rdx), %rax
  testq $0x6, %rax
  jnz     label12; j label10
block10:
  movl $0x2, %esi
  movq %r12, %rdx
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
