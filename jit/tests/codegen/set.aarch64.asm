=== plain
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 44 bytes
; userextname0 = u0:1 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  mov x2, x1
  ldur x4, [x0, #-24]
  tbnz x4, #0, label2 ; b label1
block2:
  stur x2, [x4, #17]
  b label3
block3:
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #2
  bl 0
  b label3
=== dict recover
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 84 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_dict
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  ldur x2, [x0, #-24]
  add x9, x2, #1
  and x9, x9, #7
  cbnz x9, label2 ; b label1
block1:
  stur x1, [x2, #17]
  b label5
block5:
  ldp fp, lr, [sp], #16
  ret
block2:
  mov x13, x1
  add x12, x2, #1
  and x12, x12, #6
  cbnz x12, label4 ; b label3
block3:
  movz x1, #2
  mov x2, x13
  bl 0
  b label5
block4:
  mov x1, x0
  movz w0, #0
  bl 0
  b label5
=== bounds recover
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 88 bytes
; userextname0 = u0:1 = stub -> gl_check_bounds
; userextname1 = u0:2 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x20, x1
  ldur x19, [x0, #-24]
  tbnz x19, #0, label2 ; b label1
block2:
  mov x1, x0
  movz w0, #0
  add x2, x19, #1
  movz x3, #2
  bl 0
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  mov x2, x20
  stur x2, [x19, #17]
  b label5
block5:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #2
  mov x2, x20
  bl 0
  b label5
block3:
  b label5
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 112 bytes
; userextname0 = u0:1 = stub -> gl_check_live
; userextname1 = u0:2 = stub -> gl_check_mem
; userextname2 = u0:3 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x0
  mov x20, x1
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
  mov x2, x20
  stur x2, [x19, #17]
  b label8
block8:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label8
block3:
  movz x1, #2
  mov x2, x20
  bl 0
  b label8
block5:
  b label8
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 92 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x1
  mov x20, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x6, User(userextname1)
  mov x1, x20
  blr x6
  mov x0, x20
  ldur x7, [x0, #-24]
  tbnz x7, #0, label2 ; b label1
block2:
  mov x2, x19
  stur x2, [x7, #17]
  b label3
block3:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #2
  mov x2, x19
  bl 0
  b label3
=== adstack abort
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 44 bytes
; userextname0 = u0:1 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
block0:
  mov x2, x1
  ldur x4, [x0, #-24]
  tbnz x4, #0, label2 ; b label1
block2:
  stur x2, [x4, #17]
  b label3
block3:
  ldp fp, lr, [sp], #16
  ret
block1:
  movz x1, #2
  bl 0
  b label3
=== all abort
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 240 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  stp x24, x27, [sp, #-16]!
  unwind SaveReg { clobber_offset: 16, reg: p24i }
  unwind SaveReg { clobber_offset: 24, reg: p27i }
  stp x19, x22, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p22i }
block0:
  mov x22, x1
  mov x24, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x24
  blr x2
  movz w1, #0
  mov x19, x24
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x24, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x27, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x1, x22
  mov x2, x27
  stur x1, [x2, #17]
  b label12
block12:
  ldp x19, x22, [sp], #16
  ldp x24, x27, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label12
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x27
  add x2, x1, #1
  movz x3, #2
  mov x1, x24
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  b label12
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #2
  mov x0, x24
  mov x2, x22
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x24
  bl 0
  b label12
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 240 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all) -> gl_report_dict
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  stp x24, x27, [sp, #-16]!
  unwind SaveReg { clobber_offset: 16, reg: p24i }
  unwind SaveReg { clobber_offset: 24, reg: p27i }
  stp x19, x22, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p22i }
block0:
  mov x22, x1
  mov x24, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x24
  blr x2
  movz w1, #0
  mov x19, x24
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x24, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x27, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x1, x22
  mov x2, x27
  stur x1, [x2, #17]
  b label12
block12:
  ldp x19, x22, [sp], #16
  ldp x24, x27, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label12
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x27
  add x2, x1, #1
  movz x3, #2
  mov x1, x24
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  b label12
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label11 ; b label10
block10:
  movz x1, #2
  mov x0, x24
  mov x2, x22
  bl 0
  b label12
block11:
  movz w0, #0
  mov x1, x24
  bl 0
  b label12
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@set:  ; 244 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_watch
; userextname2 = u0:2 = stub -> gl_check_live
; userextname3 = u0:3 = stub(preserve_all): trap scratch hand-off
; userextname4 = u0:4 = stub -> gl_check_mem
; userextname5 = u0:5 = stub -> gl_check_bounds
; userextname6 = u0:6 = stub -> gl_store_attr_slow
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  stp x25, x28, [sp, #-16]!
  unwind SaveReg { clobber_offset: 16, reg: p25i }
  unwind SaveReg { clobber_offset: 24, reg: p28i }
  stp x19, x23, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p23i }
block0:
  mov x23, x1
  mov x25, x0
  load_ext_name_got x0, User(userextname0)
  load_ext_name_got x2, User(userextname1)
  mov x1, x25
  blr x2
  movz w1, #0
  mov x19, x25
  mov x0, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  ldur x2, [x19, #-24]
  mov x25, x19
  add x0, x2, #1
  and x0, x0, #7
  cbnz x0, label9 ; b label3
block3:
  sub x0, x2, #7
  mov x28, x2
  movz w1, #8
  movz w2, #0
  bl 0
  ands wzr, w0, #255
  b.ne label5 ; b label4
block8:
  mov x1, x23
  mov x2, x28
  stur x1, [x2, #17]
  b label11
block11:
  ldp x19, x23, [sp], #16
  ldp x25, x28, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label11
block4:
  b label7
block5:
  movz w0, #0
  mov x1, x28
  add x2, x1, #1
  movz x3, #2
  mov x1, x25
  bl 0
  ands wzr, w0, #255
  b.ne label8 ; b label6
block6:
  b label7
block7:
  b label11
block9:
  add x0, x2, #1
  and x0, x0, #6
  cbnz x0, label12 ; b label10
block10:
  movz x1, #2
  mov x0, x25
  mov x2, x23
  bl 0
  b label11
block12:
  movz x0, #1
  movz x3, #0
  mov x1, x25
  bl 0
  udf #0xc11f
