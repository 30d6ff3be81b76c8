import torch


class Model(torch.nn.Module):
    """GPT-2's token embedding (llm.c's encoder_forward without the position term)."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(50257, 768)

    def forward(self, idx):
        return self.wte(idx)


def get_inputs():
    return [torch.randint(0, 50257, (8, 1024))]


def get_init_inputs():
    return []
