"""The one exception that marks the edge of the modelled fragment.

Whatever raises it turns into verdict `unknown` with its message; it must name the construct (an
instruction, a memory space, a loop shape, an ATen op) so a user can tell what LARK could not model.
"""


class Unsupported(Exception):
    def __init__(self, feature: str, where: str | None = None):
        self.feature = feature
        self.where = where
        super().__init__(f"{feature} ({where})" if where else feature)
