=== plain
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 20 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  str x1, [x0, #8]
  ldp fp, lr, [sp], #16
  ret
=== dict recover
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 20 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  str x1, [x0, #8]
  ldp fp, lr, [sp], #16
  ret
=== bounds recover
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 88 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_redzone
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x9, x1
  add x8, x0, #8
  mov x11, x0
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x5, sp
  mov x0, x8
  mov x4, x9
  bl 0
  ldrb w9, [sp]
  ands wzr, w9, #255
  b.ne label2 ; b label1
block2:
  mov x0, x11
  str x4, [x0, #8]
  b label3
block3:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label3
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 84 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x10, x1
  add x7, x0, #8
  mov x9, x0
  movz w1, #8
  movz w2, #0
  mov x3, sp
  mov x0, x7
  bl 0
  ldrb w8, [sp]
  ands wzr, w8, #255
  b.ne label2 ; b label1
block2:
  b label3
block3:
  mov x0, x9
  mov x1, x10
  str x1, [x0, #8]
  b label4
block4:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label4
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 72 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x8, x1
  mov x10, x0
  movz w0, #0
  mov x11, x10
  add x1, x11, #8
  movz w2, #8
  mov x4, sp
  mov x3, x8
  bl 0
  ldr w8, [sp]
  cbnz w8, label1 ; b label2
block1:
  b label3
block2:
  str x3, [x11, #8]
  b label3
block3:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
=== adstack abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 20 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  str x1, [x0, #8]
  ldp fp, lr, [sp], #16
  ret
=== all abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 164 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x5, x1
  add x4, x0, #8
  mov x6, x0
  movz w1, #8
  movz w2, #0
  mov x3, sp
  mov x0, x4
  bl 0
  mov x4, x3
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  add x0, x6, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x7, x4
  mov x4, x5
  mov x5, x7
  bl 0
  mov x0, x4
  mov x4, x5
  mov x5, x0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  movz w0, #0
  add x1, x6, #8
  movz w2, #8
  mov x3, x5
  bl 0
  ldr w0, [sp]
  cbnz w0, label5 ; b label6
block5:
  b label7
block6:
  str x3, [x6, #8]
  b label7
block7:
  b label8
block8:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label8
block3:
  b label8
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 164 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x5, x1
  add x4, x0, #8
  mov x6, x0
  movz w1, #8
  movz w2, #0
  mov x3, sp
  mov x0, x4
  bl 0
  mov x4, x3
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  add x0, x6, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x7, x4
  mov x4, x5
  mov x5, x7
  bl 0
  mov x0, x4
  mov x4, x5
  mov x5, x0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  movz w0, #0
  add x1, x6, #8
  movz w2, #8
  mov x3, x5
  bl 0
  ldr w0, [sp]
  cbnz w0, label5 ; b label6
block5:
  b label7
block6:
  str x3, [x6, #8]
  b label7
block7:
  b label8
block8:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label8
block3:
  b label8
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 172 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_redzone
; userextname2 = u0:3 = stub(preserve_all, verdict in memory) -> gl_clobber_overlaps
; userextname3 = u0:4 = stub(preserve_all): trap scratch hand-off
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x5, x1
  add x4, x0, #8
  mov x6, x0
  movz w1, #8
  movz w2, #0
  mov x3, sp
  mov x0, x4
  bl 0
  mov x7, x3
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  add x0, x6, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x4, x5
  mov x5, x7
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  add x0, x6, #8
  movz w1, #8
  mov x2, x7
  bl 0
  ldr w0, [sp]
  cbnz w0, label7 ; b label5
block5:
  str x4, [x6, #8]
  b label6
block6:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label6
block3:
  b label6
block7:
  mov x5, x4
  movz x0, #1
  add x1, x6, #8
  movz x2, #8
  mov x3, x5
  bl 0
  udf #0xc11f
