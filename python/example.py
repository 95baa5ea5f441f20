import untorn, untorn.dbm, shelve

with untorn.open("example.ut") as db:
    with db.begin(write=True) as txn:          # commits at the end of the block
        txn.put(b"user:1", b"ada")
        txn.put(b"user:2", b"grace")
        txn.put(b"zone:eu", b"3")
    with db.begin() as txn:                     # read-only by default
        print(txn.get(b"user:2"), txn.get(b"user:9", b"?"), b"zone:eu" in txn)
        print(list(txn.items(prefix=b"user:", reverse=True)))
    try:
        with db.begin(write=True) as txn:
            txn.put(b"user:3", b"linus")
            raise KeyboardInterrupt             # aborts: user:3 never lands
    except KeyboardInterrupt:
        pass
    m = untorn.Mapping(db)                      # one transaction per operation
    print(sorted(m), len(m))
    try:
        with db.begin(write=True) as txn:
            txn.put(b"k", "not bytes")
    except TypeError as e:
        print("TypeError:", e)
    try:
        untorn.open("example.ut", lock_timeout=0)
    except untorn.LockedError as e:
        print(type(e).__name__, e.code, e.detail)
    print(db.info()["protect"], "--", db.info()["reason"])
    print(db.check()["ok"])

with shelve.Shelf(untorn.dbm.open("shelf.ut", "c")) as sh:
    sh["config"] = {"retries": 3, "hosts": ["a", "b"]}
with shelve.Shelf(untorn.dbm.open("shelf.ut", "r")) as sh:
    print(sh["config"])
