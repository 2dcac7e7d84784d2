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

@poke:  ; 84 bytes
; userextname0 = u0:1 = stub -> gl_check_redzone
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x1
  add x7, x0, #8
  mov x20, x0
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x0, x7
  mov x4, x19
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x0, x20
  mov x1, x19
  str x1, [x0, #8]
  b label3
block3:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label3
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 76 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x1
  add x6, x0, #8
  mov x20, x0
  movz w1, #8
  movz w2, #0
  mov x0, x6
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  b label3
block3:
  mov x0, x20
  mov x1, x19
  str x1, [x0, #8]
  b label4
block4:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label4
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 84 bytes
; userextname0 = u1:0 = guardlift_runtime (data)
; userextname1 = u0:1 = gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x12, x0
  mov x20, x1
  load_ext_name_got x0, User(userextname0)
  movz w1, #0
  mov x19, x12
  add x2, x19, #8
  movz w3, #8
  load_ext_name_got x8, User(userextname1)
  mov x4, x20
  blr x8
  cbnz w0, label1 ; b label2
block1:
  b label3
block2:
  mov x1, x20
  str x1, [x19, #8]
  b label3
block3:
  ldp x19, x20, [sp], #16
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

@poke:  ; 144 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x1
  add x3, x0, #8
  mov x20, x0
  movz w1, #8
  movz w2, #0
  mov x0, x3
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x1, x20
  add x0, x1, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x4, x19
  bl 0
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  load_ext_name_got x0, User(userextname2)
  movz w1, #0
  add x2, x20, #8
  movz w3, #8
  load_ext_name_got x5, User(userextname3)
  mov x4, x19
  blr x5
  cbnz w0, label5 ; b label6
block5:
  b label7
block6:
  str x19, [x20, #8]
  b label7
block7:
  b label8
block8:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label8
block3:
  b label8
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 144 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_check
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 16 }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x19, x1
  add x3, x0, #8
  mov x20, x0
  movz w1, #8
  movz w2, #0
  mov x0, x3
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x1, x20
  add x0, x1, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x4, x19
  bl 0
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  load_ext_name_got x0, User(userextname2)
  movz w1, #0
  add x2, x20, #8
  movz w3, #8
  load_ext_name_got x5, User(userextname3)
  mov x4, x19
  blr x5
  cbnz w0, label5 ; b label6
block5:
  b label7
block6:
  str x19, [x20, #8]
  b label7
block7:
  b label8
block8:
  ldp x19, x20, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label8
block3:
  b label8
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@poke:  ; 180 bytes
; userextname0 = u0:1 = stub -> gl_check_mem
; userextname1 = u0:2 = stub -> gl_check_redzone
; userextname2 = u1:0 = guardlift_runtime (data)
; userextname3 = u0:3 = gl_clobber_overlaps
; userextname4 = u0:4 = stub(preserve_all): trap scratch hand-off
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 32 }
  stp x21, x23, [sp, #-16]!
  unwind SaveReg { clobber_offset: 16, reg: p21i }
  unwind SaveReg { clobber_offset: 24, reg: p23i }
  stp x19, x20, [sp, #-16]!
  unwind SaveReg { clobber_offset: 0, reg: p19i }
  unwind SaveReg { clobber_offset: 8, reg: p20i }
block0:
  mov x21, x1
  add x3, x0, #8
  mov x23, x0
  movz w1, #8
  movz w2, #0
  mov x0, x3
  bl 0
  ands wzr, w0, #255
  b.ne label2 ; b label1
block2:
  mov x1, x23
  add x0, x1, #8
  movz w1, #8
  movz w2, #0
  movz w3, #1
  mov x19, x21
  mov x4, x19
  bl 0
  ands wzr, w0, #255
  b.ne label4 ; b label3
block4:
  load_ext_name_got x0, User(userextname2)
  mov x20, x23
  add x1, x20, #8
  movz w2, #8
  load_ext_name_got x3, User(userextname3)
  blr x3
  cbnz w0, label7 ; b label5
block5:
  str x19, [x20, #8]
  b label6
block6:
  ldp x19, x20, [sp], #16
  ldp x21, x23, [sp], #16
  ldp fp, lr, [sp], #16
  ret
block1:
  b label6
block3:
  b label6
block7:
  mov x21, x19
  movz x0, #1
  add x1, x20, #8
  movz x2, #8
  mov x3, x21
  bl 0
  udf #0xc11f
