package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
	"go.uber.org/zap"
)

// ErrNotRemote is the cause of a login or logout for a server that is not
// reached over HTTP (a url server): OAuth applies to remote servers only.
var ErrNotRemote = errors.New("not a remote (url) server: OAuth login applies only to servers reached over HTTP")

// RemoteAuth runs the OAuth logins of remote servers; NewRemoteAuth
// implements it over an oauth.Manager and the supervisor's specs. Its errors for a server that is
// not configured wrap supervisor.ErrUnknownServer, for one that is not a
// url server ErrNotRemote.
type RemoteAuth interface {
	Login(ctx context.Context, server string, opts oauth.LoginOptions) (*oauth.LoginFlow, error)
	Logout(server string) error
	// LoggedIn is told of a login that succeeded, so that the server
	// leaves "login required".
	LoggedIn(ctx context.Context, server string)
	// Status is server's login; ok is false for a server with no OAuth.
	Status(server string) (st oauth.Status, ok bool)
}

// SetRemoteAuth installs what the Login and Logout RPCs and the oauth
// field of server statuses use; until it is set they say that remote
// servers are not available.
func (s *Service) SetRemoteAuth(ra RemoteAuth) {
	s.mu.Lock()
	s.remoteAuth = ra
	s.mu.Unlock()
}

func (s *Service) getRemoteAuth() RemoteAuth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remoteAuth
}

// BeginLogin starts the OAuth login of the remote server name, for the
// Login RPC and for callers that hold no stream (the dashboard): the
// flow's URL is for the user's browser, and FinishLogin (or the flow's
// Close) must follow. A login already in progress for name is cancelled.
// Its errors are the service's (service.Error).
func (s *Service) BeginLogin(ctx context.Context, name string, scopes []string) (*oauth.LoginFlow, error) {
	if name == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return nil, ToError(fmt.Errorf("server %q: %w", name, ErrNotRemote))
	}
	flow, err := ra.Login(ctx, name, oauth.LoginOptions{Scopes: scopes})
	if err != nil {
		return nil, ToError(err)
	}
	return flow, nil
}

// addOAuthStatus sets the OAuth state of the statuses of remote servers.
func (s *Service) addOAuthStatus(servers []service.ServerStatus) {
	ra := s.getRemoteAuth()
	if ra == nil {
		return
	}
	for i := range servers {
		if st, ok := ra.Status(servers[i].Name); ok {
			servers[i].OAuth = oauthStatusOf(st)
		}
	}
}

// FinishLogin waits for flow's redirect and code exchange, until ctx is
// done, then restarts the server, which leaves "login required", and
// returns its login. It closes the flow. A login abandoned for another
// (or a logout) is Aborted, a failed one Unauthenticated; no error carries
// a token, code or secret. Its errors are the service's (service.Error).
func (s *Service) FinishLogin(ctx context.Context, name string, flow *oauth.LoginFlow) (*service.OAuthStatus, error) {
	defer flow.Close()
	st, err := flow.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ToError(ctx.Err())
		}
		if errors.Is(err, oauth.ErrLoginCancelled) {
			return nil, codeError(service.Aborted, "%s", err.Error())
		}
		s.log.Info("login failed", zap.String("server", name), zap.Error(err))
		return nil, codeError(service.Unauthenticated, "%s", err.Error())
	}
	if ra := s.getRemoteAuth(); ra != nil {
		ra.LoggedIn(ctx, name)
	}
	return oauthStatusOf(st), nil
}

// Logout forgets the OAuth tokens of the remote server name, reporting
// whether it was logged in.
func (s *Service) Logout(name string) (wasLoggedIn bool, err error) {
	if name == "" {
		return false, codeError(service.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return false, ToError(fmt.Errorf("server %q: %w", name, ErrNotRemote))
	}
	before, _ := ra.Status(name)
	if err := ra.Logout(name); err != nil {
		return false, ToError(err)
	}
	return before.Issuer != "", nil
}
