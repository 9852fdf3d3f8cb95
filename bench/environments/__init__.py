"""env.yaml, in one package: everything bench knows about `clusters/<name>/env.yaml`.

`load` reads an environment folder (and checks its numbers, `numbers`, at every load);
`schema` assembles one JSON Schema per kind from the keys each kind's module declares;
`check` is `bench validate`'s list of problems (`shape`, `limits`, cost rates, expected
bands); `facts` freezes what a record keeps of the environment. Nothing under records/,
importers/ or in_job/ imports this package: they are handed the facts.
"""
