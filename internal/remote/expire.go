package remote

import (
	"errors"
	"fmt"
	"time"
)

// expireGrace bounds how long an expired session's Conn waits for the
// HTTP answers of the requests still in flight before it ends.
const expireGrace = 2 * time.Second

// expire ends the Conn because the server no longer knows its session
// (a 404 on a request carrying the session id). The requests still waiting
// for their HTTP answer get it first, within expireGrace: the server
// answers them 404 too, which says they were not processed and may be sent
// again in a new session; ended with the Conn they could only fail. New
// requests are refused meanwhile, as not sent.
func (c *Conn) expire(what string) {
	c.mu.Lock()
	if c.expiring || c.endErr != nil {
		c.mu.Unlock()
		return
	}
	c.expiring = true
	c.wg.Add(1)
	c.mu.Unlock()
	c.event("session expired (HTTP 404 on %s)", what)
	go func() {
		defer c.wg.Done()
		grace := time.NewTimer(expireGrace)
		defer grace.Stop()
		for c.unanswered() > 0 {
			select {
			case <-c.settled:
			case <-grace.C:
				c.fail(c.expiredError())
				return
			case <-c.life.Done():
				return
			}
		}
		c.fail(c.expiredError())
	}()
}

func (c *Conn) expiredError() error {
	return fmt.Errorf("server %q: %w (HTTP 404 Not Found)", c.opts.Name, ErrSessionExpired)
}

// notProcessed is the error of a request the server refused for its
// expired session, or that was not sent because of it.
func (c *Conn) notProcessed() error {
	return fmt.Errorf("server %q: %w (HTTP 404 Not Found): %w", c.opts.Name, ErrSessionExpired, ErrNotProcessed)
}

// unanswered counts the requests whose HTTP answer has not arrived.
func (c *Conn) unanswered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.streams {
		if !s.answered.Load() {
			n++
		}
	}
	return n
}

// settle notes that a request got its HTTP answer or ended, for expire.
func (c *Conn) settle() {
	select {
	case c.settled <- struct{}{}:
	default:
	}
}

// notSent is the error of a message not sent because the Conn ended with
// endErr; after an expired session a request may be sent again, in the
// next one.
func notSent(endErr error) error {
	if errors.Is(endErr, ErrSessionExpired) {
		return fmt.Errorf("%w: %w: %w", ErrClosed, endErr, ErrNotProcessed)
	}
	return fmt.Errorf("%w: %w", ErrClosed, endErr)
}
