#!/usr/bin/env python3
"""dnsquery.py SERVER[:PORT] NAME [EXPECTED_IP]: one A query over UDP (standard library only).
Prints the answers; exits 0 when there is an answer (and it includes EXPECTED_IP if given)."""
import random, socket, struct, sys

server, _, port = sys.argv[1].partition(":")
name = sys.argv[2]
expected = sys.argv[3] if len(sys.argv) > 3 else None
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
s.sendto(q, (server, int(port or 53)))
data, _ = s.recvfrom(4096)
rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
if rid != qid or flags & 0xF:
    sys.exit("rcode %d" % (flags & 0xF))

def skip_name(buf, i):
    while True:
        n = buf[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += n + 1

i = 12
for _ in range(qd):
    i = skip_name(data, i) + 4
ips = []
for _ in range(an):
    i = skip_name(data, i)
    rtype, _, _, rdlen = struct.unpack(">HHIH", data[i:i + 10])
    i += 10
    if rtype == 1 and rdlen == 4:
        ips.append(socket.inet_ntoa(data[i:i + 4]))
    i += rdlen
print(name, " ".join(ips))
sys.exit(0 if ips and (expected is None or expected in ips) else 1)
