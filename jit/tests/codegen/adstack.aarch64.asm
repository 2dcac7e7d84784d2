=== plain
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 64 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x6, #0
  mov x7, sp
  str x6, [sp]
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x9, #1
  str x9, [sp]
  ldr d0, [x7, #8]
  str x6, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== dict recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 64 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x6, #0
  mov x7, sp
  str x6, [sp]
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x9, #1
  str x9, [sp]
  ldr d0, [x7, #8]
  str x6, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== bounds recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 64 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x6, #0
  mov x7, sp
  str x6, [sp]
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x9, #1
  str x9, [sp]
  ldr d0, [x7, #8]
  str x6, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== lifetime abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 64 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x6, #0
  mov x7, sp
  str x6, [sp]
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x9, #1
  str x9, [sp]
  ldr d0, [x7, #8]
  str x6, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== clobber abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 64 bytes
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x6, #0
  mov x7, sp
  str x6, [sp]
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x9, #1
  str x9, [sp]
  ldr d0, [x7, #8]
  str x6, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== adstack abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 84 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x12, #0
  mov x11, sp
  str x12, [sp]
  b label1
block1:
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x15, #1
  str x15, [sp]
  b label2
block2:
  ldr x0, [sp]
  lsl x1, x0, #4
  movn x15, #7
  add x2, x11, x15
  ldr d0, [x2, x1]
  sub x0, x0, #1
  str x0, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== all abort
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 84 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x12, #0
  mov x11, sp
  str x12, [sp]
  b label1
block1:
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x15, #1
  str x15, [sp]
  b label2
block2:
  ldr x0, [sp]
  lsl x1, x0, #4
  movn x15, #7
  add x2, x11, x15
  ldr d0, [x2, x1]
  sub x0, x0, #1
  str x0, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== all recover
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 84 bytes
; userextname0 = u0:1 = stub(preserve_all) -> gl_report_adstack
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x12, #0
  mov x11, sp
  str x12, [sp]
  b label1
block1:
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x15, #1
  str x15, [sp]
  b label2
block2:
  ldr x0, [sp]
  lsl x1, x0, #4
  movn x15, #7
  add x2, x11, x15
  ldr d0, [x2, x1]
  sub x0, x0, #1
  str x0, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
=== all trap
; target aarch64 (aarch64-unknown-linux-gnu)

@ad:  ; 68 bytes
; userextname0 = u0:1 = stub(preserve_all): trap scratch hand-off
  stp fp, lr, [sp, #-16]!
  unwind PushFrameRegs { offset_upward_to_caller_sp: 16 }
  mov fp, sp
  unwind DefineNewFrame { offset_upward_to_caller_sp: 16, offset_downward_to_clobbers: 0 }
  sub sp, sp, #80
  unwind StackAlloc { size: 80 }
block0:
  movz x8, #0
  mov x7, sp
  str x8, [sp]
  b label1
block1:
  str d0, [sp, #8]
  movi v16.2s, #0
  str d16, [sp, #16]
  movz x11, #1
  str x11, [sp]
  b label2
block2:
  ldr d0, [x7, #8]
  movz x13, #0
  str x13, [sp]
  add sp, sp, #80
  ldp fp, lr, [sp], #16
  ret
