// placeholder: CPU reference BCSR SpMM (preprocessing issue)
