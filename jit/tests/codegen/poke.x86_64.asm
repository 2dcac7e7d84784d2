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

@poke:  ; 80 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_redzone
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r11
  leaq 8(%rdi), %r10
  movq %rdi, %rax
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  leaq <offset:1>+(%rsp), %r9
  movq %r10, %rdi
  movq %r11, %r8
  call    User(userextname0)
  movzbq <offset:1>+(%rsp), %r10
  testb %r10b, %r10b
  jnz     label2; j label1
block2:
  movq %rax, %rdi
  movq %r8, 8(%rdi)
  jmp     label3
block3:
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label3
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 75 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r11
  leaq 8(%rdi), %r8
  movq %rdi, %r10
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  leaq <offset:1>+(%rsp), %rcx
  movq %r8, %rdi
  call    User(userextname0)
  movzbq <offset:1>+(%rsp), %r9
  testb %r9b, %r9b
  jnz     label2; j label1
block2:
  jmp     label3
block3:
  movq %r11, %rsi
  movq %r10, %rdi
  movq %rsi, 8(%rdi)
  jmp     label4
block4:
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label4
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@poke:  ; 66 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r9
  movq %rdi, %r11
  uninit  %rdi
  xorl %edi, %edi
  movq %r11, %rax
  leaq 8(%rax), %rsi
  movl $0x8, %edx
  leaq <offset:1>+(%rsp), %r8
  movq %r9, %rcx
  call    User(userextname0)
  movl <offset:1>+(%rsp), %r9d
  testl %r9d, %r9d
  jnz     label1; j label2
block1:
  jmp     label3
block2:
  movq %rcx, 8(%rax)
  jmp     label3
block3:
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

@poke:  ; 141 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r8
  leaq 8(%rdi), %rax
  movq %rdi, %r10
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  leaq <offset:1>+(%rsp), %rcx
  movq %rax, %rdi
  call    User(userextname0)
  movq %rcx, %r9
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %r10, %rax
  leaq 8(%rax), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rcx
  testb %cl, %cl
  jnz     label4; j label3
block4:
  uninit  %rdi
  xorl %edi, %edi
  leaq 8(%rax), %rsi
  movl $0x8, %edx
  movq %r8, %rcx
  movq %r9, %r8
  call    User(userextname2)
  movl <offset:1>+(%rsp), %edx
  testl %edx, %edx
  jnz     label5; j label6
block5:
  jmp     label7
block6:
  movq %rcx, 8(%rax)
  jmp     label7
block7:
  jmp     label8
block8:
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

@poke:  ; 141 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r8
  leaq 8(%rdi), %rax
  movq %rdi, %r10
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  leaq <offset:1>+(%rsp), %rcx
  movq %rax, %rdi
  call    User(userextname0)
  movq %rcx, %r9
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %r10, %rax
  leaq 8(%rax), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rcx
  testb %cl, %cl
  jnz     label4; j label3
block4:
  uninit  %rdi
  xorl %edi, %edi
  leaq 8(%rax), %rsi
  movl $0x8, %edx
  movq %r8, %rcx
  movq %r9, %r8
  call    User(userextname2)
  movl <offset:1>+(%rsp), %edx
  testl %edx, %edx
  jnz     label5; j label6
block5:
  jmp     label7
block6:
  movq %rcx, 8(%rax)
  jmp     label7
block7:
  jmp     label8
block8:
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

@poke:  ; 160 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_overlaps
; userextname3 = u0:4 = stub(preserve_all): trap scratch hand-off
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r8
  leaq 8(%rdi), %rax
  movq %rdi, %r10
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  leaq <offset:1>+(%rsp), %rcx
  movq %rax, %rdi
  call    User(userextname0)
  movq %rcx, %r9
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq %r10, %rax
  leaq 8(%rax), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movl $0x1, %ecx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rcx
  testb %cl, %cl
  jnz     label4; j label3
block4:
  leaq 8(%rax), %rdi
  movl $0x8, %esi
  movq %r9, %rdx
  call    User(userextname2)
  movl <offset:1>+(%rsp), %ecx
  testl %ecx, %ecx
  jnz     label7; j label5
block5:
  movq %r8, 8(%rax)
  jmp     label6
block6:
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
  leaq 8(%rax), %rsi
  movl $0x8, %edx
  movq %r8, %rcx
  call    User(userextname3)
  ud2
