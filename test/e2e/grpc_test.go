//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"webfarm.dev/operator/test/e2e/framework"
)

// grpcFarm: the test application in gRPC mode, one worker that takes two
// calls at once, behind a farm with one route.
var grpcFarm = `apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: greeter}
spec:
  app:
    image: localhost/webfarm-client:dev
    args: [webfarm-testapp, --listen=:9000, --grpc]
    port: 9000
    protocol: GRPC
  replicas: 1
  cpu: 50m
  memory: 64Mi
  maxConcurrentRequests: 2
  healthCheck: {interval: 2s}
  idle: {timeout: 0s, onDemandStart: false}
---
` + oneRouteFarm("grpc", "grpc.example", "greeter") +
	// Under the farm's frontend: the test reads which worker answered.
	"    debugHeaders: true\n"

// gRPC from outside the cluster (h2c) through the farm's frontend, the
// pool's nginx and the test application.
func TestGRPC(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, grpcFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/grpc", "apppool/greeter")
	front := strings.TrimPrefix(cluster.ServiceURL(t, ns, "grpc-frontend"), "http://")
	conn, err := grpc.NewClient(front, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority("grpc.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	t.Run("a health check reaches the app and says which worker answered", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var header metadata.MD
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
			if err != nil {
				return err
			}
			if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING || len(header.Get("x-webfarm-worker")) != 1 {
				t.Fatalf("status %v, header %v", resp.GetStatus(), header)
			}
			return nil
		})
	})

	t.Run("calls on one connection beyond the worker's limit wait their turn", func(t *testing.T) {
		const calls, delay = 5, 3 * time.Second
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "delay", delay.String()), time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		most := make(chan int, calls)
		begun := time.Now()
		for range calls {
			wg.Go(func() {
				stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/webfarm.test.Slow/Hold")
				if err == nil {
					err = stream.CloseSend()
				}
				if err == nil {
					err = stream.RecvMsg(&emptypb.Empty{})
				}
				if err != nil {
					t.Errorf("a call ended with %v, want its answer", err)
					return
				}
				n, _ := strconv.Atoi(strings.Join(stream.Trailer().Get("x-max-in-flight"), ""))
				most <- n
			})
		}
		wg.Wait()
		took := time.Since(begun)
		close(most)
		for n := range most {
			if n > 2 {
				t.Errorf("the app held %d calls at once, want at most the worker's 2", n)
			}
		}
		// 5 calls 2 at a time: 3 rounds of 3 s.
		if took < 3*delay {
			t.Errorf("the calls took %s, want at least %s (2 at a time)", took.Round(time.Millisecond), 3*delay)
		}
	})
}
