#!/bin/sh
# Captures the DNSWire fixtures: dig queries a loopback dnsmasq, dnsmasq dumps its replies (pcap).
set -e
PORT=15360
/usr/sbin/dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
  --listen-address=127.0.0.1 --port=$PORT --bind-interfaces --user=root --group=root --pid-file= \
  --local=/example.test/ --local-ttl=300 \
  --host-record=www.example.test,192.0.2.10,2001:db8::10 \
  --host-record=multi.example.test,192.0.2.21 --host-record=multi.example.test,192.0.2.22 \
  --cname=alias.example.test,mid.example.test --cname=mid.example.test,www.example.test \
  --dumpfile=replies.pcap --dumpmask=0x0002 &
RECURSOR=$!
/usr/sbin/dnsmasq --keep-in-foreground --no-resolv --no-hosts --conf-file=/dev/null \
  --listen-address=127.0.0.1 --port=$((PORT+1)) --bind-interfaces --user=root --group=root --pid-file= \
  --auth-server=ns.neg.test,127.0.0.1 --auth-zone=neg.test \
  --auth-soa=2024010101,hostmaster.neg.test,1200,180,1209600 --auth-ttl=900 \
  --dumpfile=auth.pcap --dumpmask=0x0002 &
AUTH=$!
sleep 1
dig -p $PORT @127.0.0.1 www.example.test A
dig -p $PORT @127.0.0.1 www.example.test AAAA
dig -p $PORT @127.0.0.1 alias.example.test A
dig -p $PORT @127.0.0.1 multi.example.test A
dig +norec -p $((PORT+1)) @127.0.0.1 nope.neg.test A
kill $RECURSOR $AUTH
wait
