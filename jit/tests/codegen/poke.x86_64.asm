=== plain
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 13 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq %rsi, 8(%rdi)
  movq %rbp, %rsp
  popq %rbp
  retq
=== dict recover
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 13 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq %rsi, 8(%rdi)
  movq %rbp, %rsp
  popq %rbp
  retq
=== bounds recover
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 91 bytes
; userextname0 = u0:1 = stub -> gl_check_redzone
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
  leaq 8(%rdi), %r8
  movq %rdi, %r13
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  movq %r8, %rdi
  movq %r12, %r8
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %r12, %rsi
  movq %r13, %rdi
  movq %rsi, 8(%rdi)
  jmp     label3
block3:
  movq (%rsp), %r12
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label3
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 83 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
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
  leaq 8(%rdi), %r8
  movq %rdi, %r13
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %r8, %rdi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  jmp     label3
block3:
  movq %r12, %rsi
  movq %r13, %rdi
  movq %rsi, 8(%rdi)
  jmp     label4
block4:
  movq (%rsp), %r12
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label4
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 93 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_clobber_check
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
  load_ext_name userextname0+0, %r9
  uninit  %rsi
  xorl %esi, %esi
  leaq 8(%rdi), %rdx
  movq %rdi, %r13
  movl $0x8, %ecx
  load_ext_name userextname1+0, %r10
  movq %r9, %rdi
  movq %r12, %r8
  call    *%r10
  testl %eax, %eax
  jnz     label1; j label2
block1:
  jmp     label3
block2:
  movq %r12, %rsi
  movq %r13, %rdi
  movq %rsi, 8(%rdi)
  jmp     label3
block3:
  movq (%rsp), %r12
  movq 8(%rsp), %r13
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
=== adstack abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 13 bytes
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  movq %rsi, 8(%rdi)
  movq %rbp, %rsp
  popq %rbp
  retq
=== all abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 150 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_check
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
  movq %rsi, %rbx
  leaq 8(%rdi), %rax
  movq %rdi, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %rax, %rdi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  leaq 8(%r12), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  movq %rbx, %r8
  call    User(userextname1)
  testb %al, %al
  jnz     label4; j label3
block4:
  load_ext_name userextname2+0, %rdi
  uninit  %rsi
  xorl %esi, %esi
  leaq 8(%r12), %rdx
  movl $0x8, %ecx
  load_ext_name userextname3+0, %rax
  movq %rbx, %r8
  call    *%rax
  testl %eax, %eax
  jnz     label5; j label6
block5:
  jmp     label7
block6:
  movq %rbx, 8(%r12)
  jmp     label7
block7:
  jmp     label8
block8:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label8
block3:
  jmp     label8
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 150 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_check
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
  movq %rsi, %rbx
  leaq 8(%rdi), %rax
  movq %rdi, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %rax, %rdi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  leaq 8(%r12), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  movq %rbx, %r8
  call    User(userextname1)
  testb %al, %al
  jnz     label4; j label3
block4:
  load_ext_name userextname2+0, %rdi
  uninit  %rsi
  xorl %esi, %esi
  leaq 8(%r12), %rdx
  movl $0x8, %ecx
  load_ext_name userextname3+0, %rax
  movq %rbx, %r8
  call    *%rax
  testl %eax, %eax
  jnz     label5; j label6
block5:
  jmp     label7
block6:
  movq %rbx, 8(%r12)
  jmp     label7
block7:
  jmp     label8
block8:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label8
block3:
  jmp     label8
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 170 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_overlaps
; userextname4 = u0:4 = stub(preserve_all): trap scratch hand-off
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
  movq %rsi, %rbx
  leaq 8(%rdi), %rax
  movq %rdi, %r12
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %rax, %rdi
  call    User(userextname0)
  testb %al, %al
  jnz     label2; j label1
block2:
  leaq 8(%r12), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  movq %rbx, %r8
  call    User(userextname1)
  testb %al, %al
  jnz     label4; j label3
block4:
  load_ext_name userextname2+0, %rdi
  leaq 8(%r12), %rsi
  movl $0x8, %edx
  load_ext_name userextname3+0, %rax
  call    *%rax
  testl %eax, %eax
  jnz     label7; j label5
block5:
  movq %rbx, 8(%r12)
  jmp     label6
block6:
  movq (%rsp), %rbx
  movq 8(%rsp), %r12
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label6
block3:
  jmp     label6
block7:
  movl $0x1, %edi
  leaq 8(%r12), %rsi
  movl $0x8, %edx
  movq %rbx, %rcx
  call    User(userextname4)
  ud2
