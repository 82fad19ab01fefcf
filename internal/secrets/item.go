package secrets

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoKeyring: the store has no Secret Service to keep an item in (it
// uses the file); the error wraps it and says why.
var ErrNoKeyring = errors.New("secrets: no Secret Service")

// Items are values mcpd keeps for itself in the Secret Service, beside the
// named secrets: one per kind, with exactly the attributes service=mcpd and
// kind=KIND and no name, so that List (and mcpdctl secret ls) skips them
// and ${secret:NAME} cannot name them. They are never kept in the file:
// where there is no Secret Service, their owner keeps its own file
// (internal/oauth: oauth.json).
//
//	secret-tool lookup service mcpd kind oauth

func itemAttrs(kind string) map[string]string {
	return map[string]string{"service": Service, "kind": kind}
}

// keyring returns the Secret Service backend, or ErrNoKeyring saying why
// there is none.
func (s *Store) keyring() (*service, error) {
	b := s.pick()
	if svc, ok := b.(*service); ok {
		return svc, nil
	}
	s.mu.Lock()
	why := s.why
	s.mu.Unlock()
	return nil, fmt.Errorf("%w: %s", ErrNoKeyring, why)
}

// GetItem returns the item of kind: ErrNotFound when there is none,
// ErrLocked when it is in a locked keyring (and the store may not prompt),
// ErrNoKeyring without a Secret Service.
func (s *Store) GetItem(ctx context.Context, kind string) (string, error) {
	svc, err := s.keyring()
	if err != nil {
		return "", err
	}
	v, err := svc.getItem(ctx, itemAttrs(kind))
	if err != nil {
		return "", s.wrapItem(svc, kind, err)
	}
	return v, nil
}

// SetItem stores value as the item of kind, labelled label, replacing any.
func (s *Store) SetItem(ctx context.Context, kind, label, value string) error {
	svc, err := s.keyring()
	if err != nil {
		return err
	}
	return s.wrapItem(svc, kind, svc.setItem(ctx, label, itemAttrs(kind), value))
}

// DeleteItem removes the item of kind; a missing one is ErrNotFound.
func (s *Store) DeleteItem(ctx context.Context, kind string) error {
	svc, err := s.keyring()
	if err != nil {
		return err
	}
	return s.wrapItem(svc, kind, svc.delItem(ctx, itemAttrs(kind)))
}

func (s *Store) wrapItem(b backend, kind string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return &nameError{fmt.Sprintf("no %s item in %s", kind, b.describe()), ErrNotFound}
	case errors.Is(err, ErrLocked):
		return &nameError{fmt.Sprintf("%s item: the keyring is locked (unlock your keyring)", kind), ErrLocked}
	}
	return fmt.Errorf("%s item in %s: %w", kind, b.describe(), err)
}
