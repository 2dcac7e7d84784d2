=== plain
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 40 bytes
; userextname0 = u0:1 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  ldur x6, [x0, #-24]
  tbnz x6, #0, label2 ; b label1
block2:
  ldur x0, [x6, #1]
  b label3
block3:
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #0
  bl 0
  b label3
=== dict recover
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 80 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_dict
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  ldur x2, [x0, #-24]
  add x12, x2, #1
  and x12, x12, #7
  cbnz x12, label2 ; b label1
block1:
  ldur x0, [x2, #1]
  b label5
block5:
  ldp fp, lr, [sp], #16
  ret
block2:
  add x14, x2, #1
  and x14, x14, #6
  cbnz x14, label4 ; b label3
block3:
  movz x1, #0
  bl 0
  b label5
block4:
  mov x1, x0
  movz w0, #0
  bl 0
  movz x0, #0
  b label5
=== bounds recover
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 92 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  ldur x11, [x0, #-24]
  tbnz x11, #0, label2 ; b label1
block2:
  mov x1, x0
  movz w0, #0
  add x2, x11, #1
  movz x3, #0
  mov x4, sp
  bl 0
  ldrb w14, [sp]
  ands wzr, w14, #255
  b.ne label4 ; b label3
block4:
  ldur x0, [x11, #1]
  b label5
block5:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #0
  bl 0
  b label5
block3:
  mov x0, x3
  b label5
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 132 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  movz w1, #0
  mov x2, sp
  bl 0
  mov x3, x2
  mov x2, x0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x0, x2
  ldur x4, [x0, #-24]
  tbnz x4, #0, label4 ; b label3
block4:
  sub x0, x4, #7
  movz w1, #8
  movz w2, #0
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label6 ; b label5
block6:
  b label7
block7:
  ldur x0, [x4, #1]
  b label8
block8:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label8
block3:
  movz x1, #0
  mov x0, x2
  bl 0
  b label8
block5:
  movz x0, #0
  b label8
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 56 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x1, sp
  bl 0
  ldur x8, [x0, #-24]
  tbnz x8, #0, label2 ; b label1
block2:
  ldur x0, [x8, #1]
  b label3
block3:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #0
  bl 0
  b label3
=== adstack abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 40 bytes
; userextname0 = u0:1 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  ldur x6, [x0, #-24]
  tbnz x6, #0, label2 ; b label1
block2:
  ldur x0, [x6, #1]
  b label3
block3:
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #0
  bl 0
  b label3
=== all abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 232 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x1, sp
  bl 0
  mov x6, x1
  movz w1, #0
  mov x2, x6
  bl 0
  ldrb w1, [sp]
  ands wzr, w1, #255
  b.ne label2 ; b label1
block2:
  ldur x4, [x0, #-24]
  mov x5, x0
  add x0, x4, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x4, #7
  movz w1, #8
  movz w2, #0
  mov x3, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x7
  ldur x0, [x2, #1]
  b label12
block12:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label12
block4:
  b label7
block5:
  movz w0, #0
  add x2, x4, #1
  mov x7, x4
  movz x3, #0
  mov x1, x5
  mov x4, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label12
block9:
  mov x2, x4
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #0
  mov x0, x5
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x5
  bl 0
  movz x0, #0
  b label12
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 232 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x1, sp
  bl 0
  mov x6, x1
  movz w1, #0
  mov x2, x6
  bl 0
  ldrb w1, [sp]
  ands wzr, w1, #255
  b.ne label2 ; b label1
block2:
  ldur x4, [x0, #-24]
  mov x5, x0
  add x0, x4, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x4, #7
  movz w1, #8
  movz w2, #0
  mov x3, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x7
  ldur x0, [x2, #1]
  b label12
block12:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label12
block4:
  b label7
block5:
  movz w0, #0
  add x2, x4, #1
  mov x7, x4
  movz x3, #0
  mov x1, x5
  mov x4, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label12
block9:
  mov x2, x4
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #0
  mov x0, x5
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x5
  bl 0
  movz x0, #0
  b label12
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 232 bytes
; userextname0 = u0:1 = stub(preserve_all, verdict in memory) -> gl_watch
; userextname1 = u0:2 = stub(preserve_all, verdict in memory) -> gl_check_live
; userextname2 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname3 = u0:4 = stub(preserve_all, verdict in memory) -> gl_check_mem
; userextname4 = u0:5 = stub(preserve_all, verdict in memory) -> gl_check_bounds
; userextname5 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #16
  unwind StackAlloc { size: 16 }
block0:
  mov x1, sp
  bl 0
  mov x6, x1
  movz w1, #0
  mov x2, x6
  bl 0
  ldrb w1, [sp]
  ands wzr, w1, #255
  b.ne label2 ; b label1
block2:
  ldur x4, [x0, #-24]
  mov x5, x0
  add x0, x4, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x4, #7
  movz w1, #8
  movz w2, #0
  mov x3, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x7
  ldur x0, [x2, #1]
  b label11
block11:
  add sp, sp, #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label11
block4:
  b label7
block5:
  movz w0, #0
  add x2, x4, #1
  mov x7, x4
  movz x3, #0
  mov x1, x5
  mov x4, x6
  bl 0
  ldrb w0, [sp]
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label11
block9:
  mov x2, x4
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label12 ; b label10
block10:
  movz x1, #0
  mov x0, x5
  bl 0
  b label11
block12:
  movz x0, #1
  movz x3, #0
  mov x1, x5
  bl 0
  udf #0xc11f
