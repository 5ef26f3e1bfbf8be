"""What a site declares and what a run may vary, with no ReFrame: the TOPOFOAM_* settings,
the runtime presets, the fabric profiles and the sweep space. Site files import it."""
