"""HLO modules several test folders collect from (one copy, so a change reaches every user)."""

# A dot and a reshape: two configurable nodes, compiles and runs in well under a second, so
# whole collections (worker logs, the Ray executor, label summaries) stay cheap in tests.
DOT_RESHAPE_HLO = """
HloModule small
ENTRY main {
  x = f32[8,64]{1,0} parameter(0)
  w = f32[64,32]{1,0} parameter(1)
  d = f32[8,32]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8,4,8]{2,1,0} reshape(d)
}
"""
