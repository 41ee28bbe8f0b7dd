"""What a run watches: wall loads, Cp and the residual history."""
