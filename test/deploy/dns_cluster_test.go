//go:build cluster

package deploy

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// clusterDNS is the node's resolver, the simplest one that serves the
// names pods of the chart dial: <svc>.<ns>.svc.<domain> (the ClusterIP, or
// the endpoints of a headless Service) and <hostname>.<svc>.<ns>.svc.<domain>
// (a StatefulSet pod behind its governing Service), from the Services and
// EndpointSlices of the node's kube-apiserver. Every other name is
// NXDOMAIN: the node forwards nothing off the machine.
type clusterDNS struct {
	services  corelisters.ServiceLister
	endpoints discoverylisters.EndpointSliceLister
}

// startClusterDNS serves DNS on the gateway's port 53 (the kubelet's
// clusterDNS) over UDP and TCP until the node stops.
func startClusterDNS(t *testing.T, n *node) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(n.kube, 0)
	d := &clusterDNS{services: factory.Core().V1().Services().Lister(), endpoints: factory.Discovery().V1().EndpointSlices().Lister()}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	udp, err := net.ListenPacket("udp4", gatewayIP+":53")
	if err != nil {
		cancel()
		t.Fatalf("cluster DNS: %v", err)
	}
	tcp, err := net.Listen("tcp4", gatewayIP+":53")
	if err != nil {
		cancel()
		udp.Close()
		t.Fatalf("cluster DNS: %v", err)
	}
	n.atEnd(func() {
		cancel()
		udp.Close()
		tcp.Close()
		factory.Shutdown()
	})
	go func() {
		buf := make([]byte, 1500)
		for {
			size, addr, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			if answer := d.answer(buf[:size]); answer != nil {
				_, _ = udp.WriteTo(answer, addr)
			}
		}
	}()
	go func() {
		for {
			conn, err := tcp.Accept()
			if err != nil {
				return
			}
			go d.serveTCP(conn)
		}
	}()
}

func (d *clusterDNS) serveTCP(conn net.Conn) {
	defer conn.Close()
	for {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		var size [2]byte
		if _, err := readFull(conn, size[:]); err != nil {
			return
		}
		msg := make([]byte, int(size[0])<<8|int(size[1]))
		if _, err := readFull(conn, msg); err != nil {
			return
		}
		answer := d.answer(msg)
		if answer == nil {
			return
		}
		if _, err := conn.Write(append([]byte{byte(len(answer) >> 8), byte(len(answer))}, answer...)); err != nil {
			return
		}
	}
}

func readFull(conn net.Conn, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := conn.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// answer builds the response to one query message; nil drops it.
func (d *clusterDNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	header, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{ID: header.ID, Response: true, Authoritative: true, RecursionDesired: header.RecursionDesired}
	addrs, known := d.lookup(strings.ToLower(strings.TrimSuffix(q.Name.String(), ".")))
	if !known {
		resp.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), resp)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil
	}
	if err := b.Question(q); err != nil {
		return nil
	}
	if err := b.StartAnswers(); err != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeALL {
		for _, ip := range addrs {
			var a [4]byte
			copy(a[:], ip.To4())
			if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: a}); err != nil {
				return nil
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// lookup resolves a cluster name to IPv4 addresses; known is false for a
// name that does not exist.
func (d *clusterDNS) lookup(name string) (addrs []net.IP, known bool) {
	rest, ok := strings.CutSuffix(name, ".svc."+clusterDomain)
	if !ok {
		return nil, false
	}
	parts := strings.Split(rest, ".")
	var host, svcName, ns string
	switch len(parts) {
	case 2:
		svcName, ns = parts[0], parts[1]
	case 3:
		host, svcName, ns = parts[0], parts[1], parts[2]
	default:
		return nil, false
	}
	svc, err := d.services.Services(ns).Get(svcName)
	if err != nil {
		return nil, false
	}
	if host == "" && svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != "" {
		return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, true
	}
	slices, err := d.endpoints.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svcName}))
	if err != nil {
		return nil, false
	}
	for _, s := range slices {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, e := range s.Endpoints {
			if host != "" {
				if e.Hostname == nil || *e.Hostname != host {
					continue
				}
			} else if !svc.Spec.PublishNotReadyAddresses && e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if ip := net.ParseIP(a); ip != nil {
					addrs = append(addrs, ip)
				}
			}
		}
	}
	// A StatefulSet pod's name exists only while it has an endpoint; the
	// headless Service's own name exists regardless.
	return addrs, host == "" || len(addrs) > 0
}
