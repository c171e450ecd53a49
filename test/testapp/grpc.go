package main

import (
	"fmt"
	"log"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// HoldMethod answers an empty message after the "delay" of the call's
// metadata (a Go duration, at most maxDelay), with the pod's name in the
// "x-worker" header and the most calls it held at once in the
// "x-max-in-flight" trailer.
const HoldMethod = "/webfarm.test.Slow/Hold"

// serveGRPC serves gRPC without TLS: the health checking protocol (SERVING)
// and HoldMethod.
func serveGRPC(listen, hostname string, stats *counters) error {
	hold := func(_ any, stream grpc.ServerStream) error {
		if m, _ := grpc.MethodFromServerStream(stream); m != HoldMethod {
			return status.Errorf(codes.Unimplemented, "no method %s", m)
		}
		var delay time.Duration
		if md, ok := metadata.FromIncomingContext(stream.Context()); ok && len(md.Get("delay")) > 0 {
			d, err := time.ParseDuration(md.Get("delay")[0])
			if err != nil || d < 0 || d > maxDelay {
				return status.Errorf(codes.InvalidArgument, "delay %q: a duration up to %s", md.Get("delay")[0], maxDelay)
			}
			delay = d
		}
		if err := stream.SetHeader(metadata.Pairs("x-worker", hostname)); err != nil {
			return err
		}
		stats.enter()
		defer stats.leave()
		select {
		case <-time.After(delay):
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
		stats.mu.Lock()
		most := stats.maxInFlight
		stats.mu.Unlock()
		stream.SetTrailer(metadata.Pairs("x-max-in-flight", strconv.Itoa(most)))
		return stream.SendMsg(&emptypb.Empty{})
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("gRPC: %w", err)
	}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(hold))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	log.Printf("serving gRPC on %s", listen)
	return srv.Serve(l)
}
