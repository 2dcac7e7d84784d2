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

@set:  ; 98 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r11
  movq -0x18(%rdi), %r10
  testq $0x1, %r10
  jnz     label2; j label1
block2:
  movq %rdi, %rsi
  uninit  %rdi
  xorl %edi, %edi
  leaq 1(%r10), %rdx
  movl $0x2, %ecx
  leaq <offset:1>+(%rsp), %r8
  call    User(userextname0)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label4; j label3
block4:
  movq %r11, %rdx
  movq %rdx, 0x11(%r10)
  jmp     label5
block5:
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  movq %r11, %rdx
  call    User(userextname1)
  jmp     label5
block3:
  jmp     label5
=== lifetime abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 122 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r8
  uninit  %rsi
  xorl %esi, %esi
  leaq <offset:1>+(%rsp), %rdx
  call    User(userextname0)
  movq %rdx, %rcx
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rdi), %rax
  testq $0x1, %rax
  jnz     label4; j label3
block4:
  leaq -7(%rax), %rdi
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rcx
  testb %cl, %cl
  jnz     label6; j label5
block6:
  jmp     label7
block7:
  movq %r8, %rdx
  movq %rdx, 0x11(%rax)
  jmp     label8
block8:
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  jmp     label8
block3:
  movl $0x2, %esi
  movq %r8, %rdx
  call    User(userextname2)
  jmp     label8
block5:
  jmp     label8
=== clobber abort
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 65 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %rdx
  leaq <offset:1>+(%rsp), %rsi
  call    User(userextname0)
  movq -0x18(%rdi), %rsi
  testq $0x1, %rsi
  jnz     label2; j label1
block2:
  movq %rdx, 0x11(%rsi)
  jmp     label3
block3:
  addq $0x10, %rsp
  movq %rbp, %rsp
  popq %rbp
  retq
block1:
  movl $0x2, %esi
  call    User(userextname1)
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

@set:  ; 228 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r9
  leaq <offset:1>+(%rsp), %rsi
  call    User(userextname0)
  movq %rsi, %r10
  uninit  %rsi
  xorl %esi, %esi
  movq %r10, %rdx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rdi), %rdx
  movq %rdi, %r8
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r11
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %r10, %rcx
  call    User(userextname3)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r11, %rdx
  movq %r9, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label12
block12:
  addq $0x10, %rsp
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
  movq %r11, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %r8, %rsi
  movq %r10, %r8
  call    User(userextname4)
  movzbq <offset:1>+(%rsp), %rax
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
  movq %r9, %rdx
  movq %r8, %rdi
  call    User(userextname5)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %r8, %rsi
  call    User(userextname2)
  jmp     label12
=== all recover
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 228 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r9
  leaq <offset:1>+(%rsp), %rsi
  call    User(userextname0)
  movq %rsi, %r10
  uninit  %rsi
  xorl %esi, %esi
  movq %r10, %rdx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rdi), %rdx
  movq %rdi, %r8
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r11
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %r10, %rcx
  call    User(userextname3)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r11, %rdx
  movq %r9, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label12
block12:
  addq $0x10, %rsp
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
  movq %r11, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %r8, %rsi
  movq %r10, %r8
  call    User(userextname4)
  movzbq <offset:1>+(%rsp), %rax
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
  movq %r9, %rdx
  movq %r8, %rdi
  call    User(userextname5)
  jmp     label12
block11:
  uninit  %rdi
  xorl %edi, %edi
  movq %r8, %rsi
  call    User(userextname2)
  jmp     label12
=== all trap
; target x86_64 (x86_64-unknown-linux-gnu)

@set:  ; 231 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_store_attr_slow
  pushq %rbp
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  movq %rsp, %rbp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  subq $0x10, %rsp
block0:
  movq %rsi, %r9
  leaq <offset:1>+(%rsp), %rsi
  call    User(userextname0)
  movq %rsi, %r10
  uninit  %rsi
  xorl %esi, %esi
  movq %r10, %rdx
  call    User(userextname1)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label2; j label1
block2:
  movq -0x18(%rdi), %rdx
  movq %rdi, %r8
  leaq 1(%rdx), %rax
  testq $0x7, %rax
  jnz     label9; j label3
block3:
  leaq -7(%rdx), %rdi
  movq %rdx, %r11
  movl $0x8, %esi
  uninit  %rdx
  xorl %edx, %edx
  movq %r10, %rcx
  call    User(userextname3)
  movzbq <offset:1>+(%rsp), %rax
  testb %al, %al
  jnz     label5; j label4
block8:
  movq %r11, %rdx
  movq %r9, %rsi
  movq %rsi, 0x11(%rdx)
  jmp     label11
block11:
  addq $0x10, %rsp
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
  movq %r11, %rax
  leaq 1(%rax), %rdx
  movl $0x2, %ecx
  movq %r8, %rsi
  movq %r10, %r8
  call    User(userextname4)
  movzbq <offset:1>+(%rsp), %rax
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
  movq %r9, %rdx
  movq %r8, %rdi
  call    User(userextname5)
  jmp     label11
block12:
  movl $0x1, %edi
  uninit  %rcx
  xorq %rcx, %rcx
  movq %r8, %rsi
  call    User(userextname2)
  ud2
