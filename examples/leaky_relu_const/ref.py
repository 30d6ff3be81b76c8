import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.leaky_relu(x, 0.01)


batch_size = 128
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
