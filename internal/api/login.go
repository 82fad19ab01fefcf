package api

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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
func (s *Server) SetRemoteAuth(ra RemoteAuth) {
	s.mu.Lock()
	s.remoteAuth = ra
	s.mu.Unlock()
}

func (s *Server) getRemoteAuth() RemoteAuth {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remoteAuth
}

// Login streams the authorization URL, then waits for the redirect and
// sends the outcome. Cancelling the stream abandons the login.
func (s *Server) Login(req *mcpdv1.LoginRequest, stream mcpdv1.Mcpd_LoginServer) error {
	ctx := stream.Context()
	flow, err := s.BeginLogin(ctx, req.GetName(), req.GetScopes())
	if err != nil {
		return err
	}
	if err := stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_AuthorizationUrl{AuthorizationUrl: flow.URL}}); err != nil {
		flow.Close()
		return err
	}
	st, err := s.FinishLogin(ctx, req.GetName(), flow)
	if err != nil {
		return err
	}
	return stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_Done{Done: st}})
}

// BeginLogin starts the OAuth login of the remote server name, for the
// Login RPC and for callers that hold no stream (the dashboard): the
// flow's URL is for the user's browser, and FinishLogin (or the flow's
// Close) must follow. A login already in progress for name is cancelled.
// Its errors are the service's (service.Error).
func (s *Server) BeginLogin(ctx context.Context, name string, scopes []string) (*oauth.LoginFlow, error) {
	if name == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return nil, toError(fmt.Errorf("server %q: %w", name, ErrNotRemote))
	}
	flow, err := ra.Login(ctx, name, oauth.LoginOptions{Scopes: scopes})
	if err != nil {
		return nil, toError(err)
	}
	return flow, nil
}

// FinishLogin waits for flow's redirect and code exchange, until ctx is
// done, then restarts the server, which leaves "login required", and
// returns its login. It closes the flow. A login abandoned for another
// (or a logout) is Aborted, a failed one Unauthenticated; no error carries
// a token, code or secret.
func (s *Server) FinishLogin(ctx context.Context, name string, flow *oauth.LoginFlow) (*mcpdv1.OAuthStatus, error) {
	defer flow.Close()
	st, err := flow.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, toError(ctx.Err())
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
	return oauthStatusToProto(st), nil
}

// Logout forgets a remote server's token.
func (s *Server) Logout(ctx context.Context, req *mcpdv1.LogoutRequest) (*mcpdv1.LogoutResponse, error) {
	if req.GetName() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return nil, toError(fmt.Errorf("server %q: %w", req.GetName(), ErrNotRemote))
	}
	before, _ := ra.Status(req.GetName())
	if err := ra.Logout(req.GetName()); err != nil {
		return nil, toError(err)
	}
	return &mcpdv1.LogoutResponse{WasLoggedIn: before.Issuer != ""}, nil
}

// addOAuthStatus sets the OAuth state of the statuses of remote servers.
func (s *Server) addOAuthStatus(servers []service.ServerStatus) {
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

// oauthStatusToProto is a remote server's OAuth state as mcpd.v1 sends it.
func oauthStatusToProto(st oauth.Status) *mcpdv1.OAuthStatus { return oauthToProto(oauthStatusOf(st)) }
