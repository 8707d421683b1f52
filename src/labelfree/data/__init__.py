"""The data layer: dataset sources, checksummed downloads, readers, splits.

Entry points (docs/data.md): :func:`labelfree.data.registry.prepare_dataset`, ``build_dataset``
and ``download_dataset``; :data:`labelfree.data.registry.SOURCES` (source name -> builder);
:func:`labelfree.data.corrupted.load_corrupted` for the released MNIST-C / CIFAR-10-C;
:class:`labelfree.data.imagenet.ImageNetVal` and :class:`labelfree.data.coco.CocoImages` (index
tables read lazily, ``materialise`` to the array format). Errors are
:class:`labelfree.data.base.DataError`.
"""
