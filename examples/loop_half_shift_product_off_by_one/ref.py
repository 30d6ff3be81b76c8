import torch
import torch.nn as nn


class Model(nn.Module):
    # The kernel multiplies x[r, c] by x[r, c + cols/2]; the reference names the factors the other way
    # round, so its summand reads x twice and only two of the four pairings of reads give the right reindexing.
    def forward(self, x):
        return (x[:, cols // 2 :] * x[:, : cols // 2]).sum(dim=1)


rows = 512
cols = 100000


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
