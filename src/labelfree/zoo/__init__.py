"""Model zoos: architectures, seeded training, safe loading of pretrained and user models.

Entry points (docs/zoo.md): :func:`labelfree.zoo.io.load_model` ``(model_dir) -> (nn.Module in
eval mode, meta dict)``; :func:`labelfree.zoo.preprocess.preprocess` ``(x_uint8_nhwc, kind) ->
float NCHW tensor``; :func:`labelfree.zoo.arch.build_model` and
:func:`labelfree.zoo.arch.feature_points`; :func:`labelfree.zoo.train.train_model`. The workflow
reads :mod:`labelfree.zoo.sheet` and :mod:`labelfree.zoo.bundle` at parse time; neither imports
torch.
"""
