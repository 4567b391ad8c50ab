"""Comments become trivia by the .ph parser's rules; only those of translated definitions count."""

from __future__ import annotations

from phobos.compile.syntax import ast as ph
from phobos.compile.syntax import parse

MODULE = """\
# About the module: dropped, it leads an import.
import phobos.lang as ph

# The scale constant.
SCALE: ph.const = 2  # doubled


def host():
    # host comment: dropped
    return 1
    # indented after host: dropped


# Leads the kernel.
@ph.kernel  # on the decorator line
def k(
    # leads x
    x: ph.tensor[ph.f32][N],  # after x
    n: ph.i32,
):  # on the header line
    # leads the let
    v: ph.let = x[0]  # after the let
    for i in range(n):  # on the loop header
        x[i] = v
        # ends the loop body
    # ends the kernel body


# Closes the module.
"""


def test_comments_attach_as_leading_trailing_and_end_comments(translate) -> None:
    module = translate(MODULE).module
    const, kernel = module.items
    assert const.leading == ("The scale constant.",)
    assert const.trailing == "doubled"
    assert kernel.leading == ("Leads the kernel.", "on the decorator line")
    x, n = kernel.params
    assert (x.leading, x.trailing) == (("leads x",), "after x")
    assert (n.leading, n.trailing) == ((), None)
    let, loop = kernel.body.body
    assert let.leading == ("on the header line", "leads the let")
    assert let.trailing == "after the let"
    assert loop.leading == ()
    (store,) = loop.body.body
    assert store.leading == ("on the loop header",)
    assert loop.body.end_comments == ("ends the loop body",)
    assert kernel.body.end_comments == ("ends the kernel body",)
    assert module.end_comments == ("Closes the module.",)


def test_comment_text_drops_the_marker_and_one_space(kernel_body) -> None:
    (stmt,) = kernel_body("#tight\n#   indented text   \nx[0] = 1.0  #\n")
    assert stmt.leading == ("tight", "  indented text")
    assert stmt.trailing == ""


def test_comments_around_else_and_pass(kernel_body) -> None:
    (branch,) = kernel_body(
        """
        if x[0] > 0.0:
            x[0] = 0.0
            # ends then
        # before else
        else:  # on else
            pass  # on pass
        """
    )
    assert branch.then.end_comments == ("ends then",)
    assert branch.orelse == ph.Block((), end_comments=("before else", "on else", "on pass"))


def test_comments_inside_a_multiline_statement_lead_it(kernel_body) -> None:
    (stmt,) = kernel_body(
        """
        x[0] = (
            # the first term
            x[1]  # and more
            + x[2]
        )  # done
        """
    )
    assert stmt.leading == ("the first term", "and more")
    assert stmt.trailing == "done"


def test_comments_next_to_host_code_are_not_taken(translate) -> None:
    module = translate(
        """
        @ph.kernel
        def k(x: ph.f32):
            pass


        # Leads the host main: dropped.
        if __name__ == "__main__":
            print(k.source)  # dropped
        # dropped too
        """
    ).module
    assert module.end_comments == ()
    assert module.items[0].body.end_comments == ()


def test_commented_code_prints_and_parses_back_to_the_same_tree(translate) -> None:
    program = translate(MODULE)
    assert parse(program.text) == program.module
    assert "    x: tensor<f32>[N], // after x\n" in program.text
    assert (
        "    for i in 0 .. n {\n        // on the loop header\n        x[i] = v\n" in program.text
    )
