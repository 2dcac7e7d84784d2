=== plain
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 108 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x15, #0
  mov x14, sp
  str x15, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v18.2s, #0
  str d18, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x1, [sp]
  lsl x0, x1, #4
  add x2, x14, x1, LSL 4
  str d0, [x2, #8]
  movi v22.2s, #0
  str d22, [x2, #16]
  add x2, x1, #1
  str x2, [sp]
  str x1, [sp]
  movn x1, #7
  add x1, x14, x1
  ldr d0, [x1, x0]
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
=== dict recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 108 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x15, #0
  mov x14, sp
  str x15, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v18.2s, #0
  str d18, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x1, [sp]
  lsl x0, x1, #4
  add x2, x14, x1, LSL 4
  str d0, [x2, #8]
  movi v22.2s, #0
  str d22, [x2, #16]
  add x2, x1, #1
  str x2, [sp]
  str x1, [sp]
  movn x1, #7
  add x1, x14, x1
  ldr d0, [x1, x0]
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
=== bounds recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 108 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x15, #0
  mov x14, sp
  str x15, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v18.2s, #0
  str d18, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x1, [sp]
  lsl x0, x1, #4
  add x2, x14, x1, LSL 4
  str d0, [x2, #8]
  movi v22.2s, #0
  str d22, [x2, #16]
  add x2, x1, #1
  str x2, [sp]
  str x1, [sp]
  movn x1, #7
  add x1, x14, x1
  ldr d0, [x1, x0]
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 108 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x15, #0
  mov x14, sp
  str x15, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v18.2s, #0
  str d18, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x1, [sp]
  lsl x0, x1, #4
  add x2, x14, x1, LSL 4
  str d0, [x2, #8]
  movi v22.2s, #0
  str d22, [x2, #16]
  add x2, x1, #1
  str x2, [sp]
  str x1, [sp]
  movn x1, #7
  add x1, x14, x1
  ldr d0, [x1, x0]
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 108 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x15, #0
  mov x14, sp
  str x15, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v18.2s, #0
  str d18, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x1, [sp]
  lsl x0, x1, #4
  add x2, x14, x1, LSL 4
  str d0, [x2, #8]
  movi v22.2s, #0
  str d22, [x2, #16]
  add x2, x1, #1
  str x2, [sp]
  str x1, [sp]
  movn x1, #7
  add x1, x14, x1
  ldr d0, [x1, x0]
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
=== adstack abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 180 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x2, #0
  mov x4, sp
  str x2, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v29.2s, #0
  str d29, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x3, [sp]
  cbnz x3, label5 ; b label4
block4:
  add x0, x4, x3, LSL 4
  str d0, [x0, #8]
  movi v0.2s, #0
  str d0, [x0, #16]
  add x0, x3, #1
  str x0, [sp]
  b label6
block6:
  ldr x3, [sp]
  sub x0, x3, #1
  str x0, [sp]
  movz x2, #1
  subs xzr, x3, #1
  b.eq label8 ; b label7
block7:
  sub x0, x3, #1
  lsl x0, x0, #4
  movn x1, #7
  add x1, x4, x1
  ldr d0, [x1, x0]
  b label9
block9:
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
block5:
  movz w1, #1
  movz x2, #1
  mov x0, x1
  bl 0
  b label6
block8:
  movz w0, #3
  movz w1, #2
  sub x3, x3, #1
  bl 0
  movi v0.2s, #0
  b label9
=== all abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 180 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x2, #0
  mov x4, sp
  str x2, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v29.2s, #0
  str d29, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x3, [sp]
  cbnz x3, label5 ; b label4
block4:
  add x0, x4, x3, LSL 4
  str d0, [x0, #8]
  movi v0.2s, #0
  str d0, [x0, #16]
  add x0, x3, #1
  str x0, [sp]
  b label6
block6:
  ldr x3, [sp]
  sub x0, x3, #1
  str x0, [sp]
  movz x2, #1
  subs xzr, x3, #1
  b.eq label8 ; b label7
block7:
  sub x0, x3, #1
  lsl x0, x0, #4
  movn x1, #7
  add x1, x4, x1
  ldr d0, [x1, x0]
  b label9
block9:
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
block5:
  movz w1, #1
  movz x2, #1
  mov x0, x1
  bl 0
  b label6
block8:
  movz w0, #3
  movz w1, #2
  sub x3, x3, #1
  bl 0
  movi v0.2s, #0
  b label9
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 180 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x2, #0
  mov x4, sp
  str x2, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v29.2s, #0
  str d29, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x3, [sp]
  cbnz x3, label5 ; b label4
block4:
  add x0, x4, x3, LSL 4
  str d0, [x0, #8]
  movi v0.2s, #0
  str d0, [x0, #16]
  add x0, x3, #1
  str x0, [sp]
  b label6
block6:
  ldr x3, [sp]
  sub x0, x3, #1
  str x0, [sp]
  movz x2, #1
  subs xzr, x3, #1
  b.eq label8 ; b label7
block7:
  sub x0, x3, #1
  lsl x0, x0, #4
  movn x1, #7
  add x1, x4, x1
  ldr d0, [x1, x0]
  b label9
block9:
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
block5:
  movz w1, #1
  movz x2, #1
  mov x0, x1
  bl 0
  b label6
block8:
  movz w0, #3
  movz w1, #2
  sub x3, x3, #1
  bl 0
  movi v0.2s, #0
  b label9
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 156 bytes
; userextname0 = u0:1 = stub(preserve_all): trap scratch hand-off
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #32
  unwind StackAlloc { size: 32 }
block0:
  movz x1, #0
  mov x4, sp
  str x1, [sp]
  cbnz x0, label2 ; b label1
block1:
  b label3
block2:
  str d0, [sp, #8]
  movi v24.2s, #0
  str d24, [sp, #16]
  movz x0, #1
  str x0, [sp]
  b label3
block3:
  ldr x2, [sp]
  cbnz x2, label9 ; b label4
block4:
  lsl x3, x2, #4
  add x0, x4, x2, LSL 4
  str d0, [x0, #8]
  movi v29.2s, #0
  str d29, [x0, #16]
  movz x1, #1
  add x0, x2, #1
  str x0, [sp]
  b label5
block5:
  str x2, [sp]
  cbz x2, label8 ; b label6
block6:
  movn x0, #7
  add x0, x4, x0
  ldr d0, [x0, x3]
  b label7
block7:
  add sp, sp, #32
  ldp fp, lr, [sp], #16
  ret
block8:
  movz x0, #4
  movz x3, #0
  bl 0
  udf #0xc11f
block9:
  movz x0, #2
  movz x1, #1
  movz x3, #0
  bl 0
  udf #0xc11f
