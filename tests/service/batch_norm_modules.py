"""The batch-norm modules of test_batchnorm_expander.py (also read by
fixtures/gen_batch_norm.py, which runs them on XLA)."""
T = {
"training": """HloModule m
ENTRY e {
  x = f32[2,3,4,5] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  ROOT b = (f32[2,3,4,5], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
}""",
"inference": """HloModule m
ENTRY e {
  x = f32[2,3,4,5] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  ROOT b = f32[2,3,4,5] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}""",
"grad": """HloModule m
ENTRY e {
  x = f32[2,3,4,5] parameter(0)
  s = f32[3] parameter(1)
  m = f32[3] parameter(2)
  v = f32[3] parameter(3)
  dy = f32[2,3,4,5] parameter(4)
  ROOT b = (f32[2,3,4,5], f32[3], f32[3]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1
}"""}
