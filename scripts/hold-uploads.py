#!/usr/bin/env python3
# usage: hold-uploads.py HOST PORT N SERVER_PID DEMO_JSON (docs/gateway.md)
# Opens N import uploads that send their headers and the first 1 MiB less one byte of a
# CSV file declared as 100 MB, holds them open, and reports the answers
# that came back while held and the server's RSS.
import json, socket, sys, time, select
host, port, n, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
demo = json.load(open(sys.argv[5]))
key, tid = demo["apiKey"], demo["tenantId"]
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) // 1024
print("rss before", rss(), "MB")
head = (f"POST /api/tenants/{tid}/imports?kind=contacts&format=csv HTTP/1.1\r\nHost: {host}\r\nX-Api-Key: {key}\r\n"
        f"Content-Type: text/csv\r\nContent-Length: 100000000\r\n\r\n").encode()
rows = b"externalId,firstName,lastName,email\n" + b"".join(b"x%d,Ada,Lovelace,ada%d@example.org\n" % (i, i) for i in range(40000))
rows = rows[:(1<<20)-1]
socks = []
for i in range(n):
    s = socket.create_connection((host, port)); s.sendall(head + rows); socks.append(s)
time.sleep(5)
peak = rss()
answers = {}
for s in socks:
    r, _, _ = select.select([s], [], [], 0)
    if r:
        data = s.recv(200)
        code = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
        answers[code] = answers.get(code, 0) + 1
    else:
        answers["held"] = answers.get("held", 0) + 1
print("rss while held", peak, "MB; answers", answers)
for s in socks: s.close()
