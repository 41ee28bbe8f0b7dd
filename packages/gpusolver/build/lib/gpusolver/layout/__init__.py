"""Device layouts of a mesh in plan order: faces, cells, face blocks, cell-face slots."""
