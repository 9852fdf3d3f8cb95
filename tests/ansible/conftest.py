from tests.ansible.local_slurm import local_slurm, standin_repo  # noqa: F401  (fixtures)
