"""HLO texts several CPU tests compile: scalar reducers, softmax, and entry
computations put together from lines (``entry_module``)."""

REDUCERS = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}

%min (p: f32[], q: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %q = f32[] parameter(1)
  ROOT %mn = f32[] minimum(%p, %q)
}
"""


def softmax(r, c):
    """Softmax over the rows of f32[r, c], as jax.nn.softmax lowers it."""
    return f"""HloModule softmax
{REDUCERS}
ENTRY %main (x: f32[{r},{c}]) -> f32[{r},{c}] {{
  %x = f32[{r},{c}] parameter(0)
  %ninf = f32[] constant(-inf)
  %mx = f32[{r}] reduce(%x, %ninf), dimensions={{1}}, to_apply=%max
  %mb = f32[{r},{c}] broadcast(%mx), dimensions={{0}}
  %sub = f32[{r},{c}] subtract(%x, %mb)
  %e = f32[{r},{c}] exponential(%sub)
  %zero = f32[] constant(0)
  %sm = f32[{r}] reduce(%e, %zero), dimensions={{1}}, to_apply=%add
  %sb = f32[{r},{c}] broadcast(%sm), dimensions={{0}}
  ROOT %out = f32[{r},{c}] divide(%e, %sb)
}}
"""


def entry_module(name, params, body, roots):
    """An entry computation: ``params`` [(name, shape text)], ``body`` lines,
    a tuple of ``roots`` [(name, shape text)] as its root."""
    lines = [f"HloModule {name}", "", "ENTRY main {"]
    lines += [f"  {p} = {s} parameter({i})" for i, (p, s) in enumerate(params)]
    lines += ["  " + line for line in body]
    lines.append(f"  ROOT out = ({', '.join(s for _, s in roots)}) "
                 f"tuple({', '.join(r for r, _ in roots)})")
    lines.append("}")
    return "\n".join(lines)
