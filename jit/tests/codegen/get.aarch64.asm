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

@get:  ; 96 bytes
; userextname0 = u0:1 = stub -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  ldur x19, [x0, #-24]
  tbnz x19, #0, label2 ; b label1
block2:
  mov x1, x0
  movz w12, #0
  add x2, x19, #1
  movz x0, #0
  mov x20, x0
  mov x0, x12
  mov x3, x20
  bl 0
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  ldur x0, [x19, #1]
  b label5
block5:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #0
  bl 0
  b label5
block3:
  mov x0, x20
  b label5
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 112 bytes
; userextname0 = u0:1 = stub -> gl_check_live
; userextname1 = u0:2 = stub -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  str x19, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
block0:
  mov x19, x0
  movz w1, #0
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x0, x19
  ldur x19, [x0, #-24]
  tbnz x19, #0, label4 ; b label3
block4:
  sub x0, x19, #7
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label6 ; b label5
block6:
  b label7
block7:
  ldur x0, [x19, #1]
  b label8
block8:
  ldr x19, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label8
block3:
  movz x1, #0
  bl 0
  b label8
block5:
  movz x0, #0
  b label8
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 80 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  str x19, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
block0:
  mov x19, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x8, User(userextname1)
  mov x1, x19
  blr x8
  mov x0, x19
  ldur x9, [x0, #-24]
  tbnz x9, #0, label2 ; b label1
block2:
  ldur x0, [x9, #1]
  b label3
block3:
  ldr x19, [sp], #16
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
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x27, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p27i }
block0:
  mov x27, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x27
  blr x2
  movz w1, #0
  mov x19, x27
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x27, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x19, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x19
  ldur x0, [x2, #1]
  b label12
block12:
  ldp x19, x27, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label12
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x19
  add x2, x1, #1
  movz x3, #0
  mov x1, x27
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label12
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #0
  mov x0, x27
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x27
  bl 0
  movz x0, #0
  b label12
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 232 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x27, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p27i }
block0:
  mov x27, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x27
  blr x2
  movz w1, #0
  mov x19, x27
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x27, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x19, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x19
  ldur x0, [x2, #1]
  b label12
block12:
  ldp x19, x27, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label12
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x19
  add x2, x1, #1
  movz x3, #0
  mov x1, x27
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label12
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #0
  mov x0, x27
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x27
  bl 0
  movz x0, #0
  b label12
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@get:  ; 232 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_load_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x27, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p27i }
block0:
  mov x27, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x27
  blr x2
  movz w1, #0
  mov x19, x27
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x27, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x19, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x2, x19
  ldur x0, [x2, #1]
  b label11
block11:
  ldp x19, x27, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x0, #0
  b label11
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x19
  add x2, x1, #1
  movz x3, #0
  mov x1, x27
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  movz x0, #0
  b label11
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label12 ; b label10
block10:
  movz x1, #0
  mov x0, x27
  bl 0
  b label11
block12:
  movz x0, #1
  movz x3, #0
  mov x1, x27
  bl 0
  udf #0xc11f
