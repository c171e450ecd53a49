package localpool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
)

// HoldMethod is the gRPC method of a GRPCApp that answers only once the test
// releases it: a slow call that holds its stream open.
const HoldMethod = "/webfarm.test.Slow/Hold"

// GRPCApp stands in for the app container of a pool whose app speaks gRPC:
// it serves the gRPC health checking protocol (SERVING) and HoldMethod, and
// says its name in the "x-worker" header of every answer.
type GRPCApp struct {
	Name string
	Port int32
	// Holding counts the HoldMethod calls the app is in.
	Holding *atomic.Int32
	// Release answers every HoldMethod call, waiting or to come.
	Release func()
}

// StartGRPCApp runs a gRPC app until the test ends.
func StartGRPCApp(t *testing.T, name string) GRPCApp {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	holding := &atomic.Int32{}
	released := make(chan struct{})
	var once atomic.Bool
	hold := func(_ any, stream grpc.ServerStream) error {
		if m, _ := grpc.MethodFromServerStream(stream); m != HoldMethod {
			return fmt.Errorf("no method %s", m)
		}
		if err := stream.SetHeader(metadata.Pairs("x-worker", name)); err != nil {
			return err
		}
		holding.Add(1)
		defer holding.Add(-1)
		select {
		case <-released:
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
		return stream.SendMsg(&emptypb.Empty{})
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(hold),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			_ = grpc.SetHeader(ctx, metadata.Pairs("x-worker", name))
			return h(ctx, req)
		}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("gRPC app %s: %v", name, err)
		}
	}()
	t.Cleanup(srv.Stop)
	return GRPCApp{Name: name, Port: int32(l.Addr().(*net.TCPAddr).Port), Holding: holding, Release: func() {
		if once.CompareAndSwap(false, true) {
			close(released)
		}
	}}
}

// StartH2CApp runs an app that speaks HTTP/2 without TLS alone (no
// HTTP/1.1), until the test ends. It answers every request with its name
// the protocol the request came in and its host.
func StartH2CApp(t *testing.T, name string) App {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	protocols := &http.Protocols{}
	protocols.SetUnencryptedHTTP2(true)
	conns := &atomic.Int64{}
	srv := &http.Server{Protocols: protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Worker", name)
		fmt.Fprintf(w, "%s %s %s\n", name, r.Proto, r.Host)
	}), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("app %s: %v", name, err)
		}
	}()
	t.Cleanup(func() { _ = srv.Close() })
	return App{Name: name, Port: int32(l.Addr().(*net.TCPAddr).Port), Connections: conns}
}
