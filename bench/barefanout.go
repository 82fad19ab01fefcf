package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// bareFanOutFirst is the first counter value of the bare fan-out's
// messages, far from the demo server's counter, so that receipts of the
// two never match each other.
const bareFanOutFirst = int64(1) << 40

// openBareFanOutApps opens n Watch streams on the bare server, each on its
// own connection; every message they receive goes to out as a receipt.
// The message is "COUNT SENT_UNIX_NANO", stamped by fireBare.
func openBareFanOutApps(ctx context.Context, path string, n int, out chan<- receipt, errs chan<- error) ([]*fanOutApp, error) {
	var apps []*fanOutApp
	for i := range n {
		conn, err := dialFloor(path)
		if err != nil {
			closeFanOutApps(apps)
			return nil, err
		}
		sctx, cancel := context.WithCancel(ctx)
		a := &fanOutApp{conn: conn, cancel: cancel, done: make(chan struct{})}
		st, err := conn.NewStream(sctx, &bareWatchDesc, bareWatchMethod)
		if err == nil {
			err = st.SendMsg(&emptypb.Empty{})
		}
		if err == nil {
			err = st.CloseSend()
		}
		if err == nil {
			err = st.RecvMsg(new(wrapperspb.StringValue)) // registered
		}
		if err != nil {
			cancel()
			_ = conn.Close()
			closeFanOutApps(apps)
			return nil, fmt.Errorf("bare fan-out app %d: %w", i, err)
		}
		apps = append(apps, a)
		go func() { // owned: closeFanOutApps waits for done
			defer close(a.done)
			recv := func() (*wrapperspb.StringValue, error) {
				m := new(wrapperspb.StringValue)
				return m, st.RecvMsg(m)
			}
			receiveAll(sctx, fmt.Sprintf("bare fan-out app %d", i), recv, bareReceipt, out, errs)
		}()
	}
	return apps, nil
}

// fireBare stamps the clock into message count and has the bare server
// send it to every Watch stream.
func fireBare(ctx context.Context, conn *grpc.ClientConn, count int64) error {
	m := wrapperspb.String(strconv.FormatInt(count, 10) + " " + strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := conn.Invoke(ctx, bareFireMethod, m, new(emptypb.Empty)); err != nil {
		return fmt.Errorf("bare fire: %w", err)
	}
	return nil
}

// bareReceipt is the receipt of a bare fan-out message.
func bareReceipt(m *wrapperspb.StringValue, now time.Time) (receipt, bool, error) {
	count, sent, err := parseBareFire(m.Value)
	if err != nil {
		return receipt{}, false, err
	}
	return receipt{count: count, latency: now.Sub(sent)}, true, nil
}

// parseBareFire reads fireBare's message.
func parseBareFire(v string) (count int64, sent time.Time, err error) {
	c, ns, ok := strings.Cut(v, " ")
	n, err1 := strconv.ParseInt(c, 10, 64)
	t, err2 := strconv.ParseInt(ns, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, time.Time{}, errors.New("bare fan-out: malformed message " + strconv.Quote(v))
	}
	return n, time.Unix(0, t), nil
}
