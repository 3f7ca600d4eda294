"""OpenSim's (Lepton) expression grammar, compiled to a ``jnp`` function of named variables.

Lepton (``Lepton::Parser::parse``), as used by ``ExpressionBasedCoordinateForce``: whitespace is
removed first; numbers (``1``, ``2.5``, ``1e-3``); variables; binary ``+ -`` (precedence 0),
``* /`` (1), ``^`` (3, right-associative); unary ``-`` (precedence 2, so ``-q^2 = -(q^2)``);
parentheses; the functions below (Lepton's built-ins, same definitions: ``step(x) = x >= 0``,
``delta(x) = x == 0``, ``recip``, ``square``, ``cube``, ...).  ``floor``, ``ceil``, ``select`` and
``atan2``, which later Lepton versions add, are refused by name: OpenSim 4.6's parser refuses them
("unknown function").  Anything else (an unknown function or variable, a stray character) is
refused by name.
"""

from __future__ import annotations

import re

import jax.numpy as jnp
import jax.scipy.special as jsp

FUNCTIONS = {
    "sqrt": (1, jnp.sqrt), "exp": (1, jnp.exp), "log": (1, jnp.log),
    "sin": (1, jnp.sin), "cos": (1, jnp.cos), "tan": (1, jnp.tan),
    "sec": (1, lambda x: 1.0 / jnp.cos(x)), "csc": (1, lambda x: 1.0 / jnp.sin(x)),
    "cot": (1, lambda x: 1.0 / jnp.tan(x)),
    "asin": (1, jnp.arcsin), "acos": (1, jnp.arccos), "atan": (1, jnp.arctan),
    "sinh": (1, jnp.sinh), "cosh": (1, jnp.cosh), "tanh": (1, jnp.tanh),
    "erf": (1, jsp.erf), "erfc": (1, jsp.erfc),
    "step": (1, lambda x: jnp.where(x >= 0, 1.0, 0.0)), "delta": (1, lambda x: jnp.where(x == 0, 1.0, 0.0)),
    "square": (1, lambda x: x * x), "cube": (1, lambda x: x * x * x), "recip": (1, lambda x: 1.0 / x),
    "min": (2, jnp.minimum), "max": (2, jnp.maximum), "abs": (1, jnp.abs),
}
#: functions of later Lepton versions that OpenSim 4.6's parser refuses ("unknown function")
NOT_IN_OPENSIM = ("floor", "ceil", "select", "atan2")
_TOKEN = re.compile(r"(\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|([-+*/^(),])")
_WHO = "compile_expression: expression"
_BINARY = {"+": (0, True), "-": (0, True), "*": (1, True), "/": (1, True), "^": (3, False)}


def _tokens(text: str):
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"{_WHO} {text!r}: unexpected character {text[pos]!r} at position {pos}")
        kind = "num" if m.group(1) else ("name" if m.group(2) else "op")
        out.append((kind, m.group(0)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text, variables):
        self.text, self.variables = text, tuple(variables)
        self.toks, self.i = _tokens(text), 0
        self.used = set()

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if tok[0] is None or (op is not None and tok[1] != op):
            raise ValueError(f"{_WHO} {self.text!r}: expected {op or 'more input'!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self, min_prec=0):
        left = self.operand()
        while True:
            kind, text = self.peek()
            if kind != "op" or text not in _BINARY or _BINARY[text][0] < min_prec:
                return left
            prec, left_assoc = _BINARY[text]
            self.take()
            right = self.expr(prec + 1 if left_assoc else prec)
            left = _apply_binary(text, left, right)

    def operand(self):
        kind, text = self.take()
        if kind == "num":
            v = float(text)
            return lambda env: v
        if kind == "op" and text == "-":
            inner = self.expr(2)
            return lambda env: -inner(env)
        if kind == "op" and text == "(":
            inner = self.expr(0)
            self.take(")")
            return inner
        if kind == "name":
            if self.peek()[1] == "(":
                if text in NOT_IN_OPENSIM:
                    raise ValueError(f"{_WHO} {self.text!r}: function {text!r} is not in OpenSim 4.6's Lepton "
                                     f"(OpenSim refuses the model: unknown function); its functions are "
                                     f"{tuple(FUNCTIONS)}")
                if text not in FUNCTIONS:
                    raise ValueError(f"{_WHO} {self.text!r}: unknown function {text!r}; Lepton's functions "
                                     f"are {tuple(FUNCTIONS)}")
                self.take("(")
                args = [self.expr(0)]
                while self.peek()[1] == ",":
                    self.take(",")
                    args.append(self.expr(0))
                self.take(")")
                n, fn = FUNCTIONS[text]
                if len(args) != n:
                    raise ValueError(f"{_WHO} {self.text!r}: {text} takes {n} argument(s), got {len(args)}")
                return lambda env: fn(*(a(env) for a in args))
            if text not in self.variables:
                raise ValueError(f"{_WHO} {self.text!r}: unknown variable {text!r}; variables are {self.variables}")
            self.used.add(text)
            return lambda env: env[text]
        raise ValueError(f"{_WHO} {self.text!r}: unexpected {text!r}")


def _apply_binary(op, a, b):
    if op == "+":
        return lambda env: a(env) + b(env)
    if op == "-":
        return lambda env: a(env) - b(env)
    if op == "*":
        return lambda env: a(env) * b(env)
    if op == "/":
        return lambda env: a(env) / b(env)
    return lambda env: a(env) ** b(env)


def compile_expression(text: str, variables=("q", "qdot")):
    """``fn(**values)`` evaluating the Lepton expression ``text`` with ``jnp`` (vectorised, differentiable).

    A parse error, an unknown function or variable raises ``ValueError``; ``fn`` raises ``TypeError``
    for a missing or unknown variable."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise TypeError(f"compile_expression: text must be a string (a Lepton expression), got {type(text).__name__}")
    if isinstance(variables, str) or not all(isinstance(v, str) and v.isidentifier() for v in variables):
        raise TypeError(f"compile_expression: variables must be a sequence of names, got {variables!r}")
    src = "".join(str(text).split())  # ExpressionBasedCoordinateForce removes all whitespace first
    if not src:
        raise ValueError(f"compile_expression: empty expression {text!r}")
    p = _Parser(src, variables)
    tree = p.expr(0)
    if p.i != len(p.toks):
        raise ValueError(f"{_WHO} {src!r}: unexpected {p.toks[p.i][1]!r} at token {p.i}")
    used, allowed = frozenset(p.used), tuple(variables)

    def fn(**env):
        unknown = sorted(set(env) - set(allowed))
        missing = sorted(used - set(env))
        if unknown or missing:
            raise TypeError(f"{_WHO} {src!r}: " + (f"unknown variable(s) {unknown}; " if unknown else "")
                            + (f"missing value(s) for {missing}; " if missing else "") + f"its variables are {allowed}")
        # as arrays: Python numbers would divide by zero with an exception where arrays give inf, as OpenSim's
        # Lepton does (IEEE arithmetic)
        return tree({k: jnp.asarray(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                     for k, v in env.items()})

    fn.source = src
    return fn
