package api

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// ErrNotRemote is the cause of a login or logout for a server that is not
// reached over HTTP (a url server): OAuth applies to remote servers only.
var ErrNotRemote = errors.New("not a remote (url) server: OAuth login applies only to servers reached over HTTP")

// RemoteAuth runs the OAuth logins of remote servers; cmd/mcpd implements
// it over an oauth.Manager and the config. Its errors for a server that is
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
	if req.GetName() == "" {
		return status.Error(codes.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return toStatus(fmt.Errorf("server %q: %w", req.GetName(), ErrNotRemote))
	}
	ctx := stream.Context()
	flow, err := ra.Login(ctx, req.GetName(), oauth.LoginOptions{Scopes: req.GetScopes()})
	if err != nil {
		return toStatus(err)
	}
	defer flow.Close()
	if err := stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_AuthorizationUrl{AuthorizationUrl: flow.URL}}); err != nil {
		return err
	}
	st, err := flow.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return toStatus(ctx.Err())
		}
		s.log.Info("login failed", zap.String("server", req.GetName()), zap.Error(err))
		return status.Error(codes.Unauthenticated, err.Error())
	}
	ra.LoggedIn(ctx, req.GetName())
	return stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_Done{Done: oauthStatusToProto(st)}})
}

// Logout forgets a remote server's token.
func (s *Server) Logout(ctx context.Context, req *mcpdv1.LogoutRequest) (*mcpdv1.LogoutResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "server name required")
	}
	ra := s.getRemoteAuth()
	if ra == nil {
		return nil, toStatus(fmt.Errorf("server %q: %w", req.GetName(), ErrNotRemote))
	}
	before, _ := ra.Status(req.GetName())
	if err := ra.Logout(req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	return &mcpdv1.LogoutResponse{WasLoggedIn: before.Issuer != ""}, nil
}

// addOAuthStatus sets the oauth field of the statuses of remote servers.
func (s *Server) addOAuthStatus(servers []*mcpdv1.ServerStatus) {
	ra := s.getRemoteAuth()
	if ra == nil {
		return
	}
	for _, p := range servers {
		if st, ok := ra.Status(p.GetName()); ok {
			p.Oauth = oauthStatusToProto(st)
		}
	}
}

func oauthStatusToProto(st oauth.Status) *mcpdv1.OAuthStatus {
	p := &mcpdv1.OAuthStatus{
		LoggedIn:        st.LoggedIn,
		LoginRequired:   st.LoginRequired,
		Reason:          st.Reason,
		LoginInProgress: st.LoginInProgress,
		Issuer:          st.Issuer,
		Resource:        st.Resource,
		ClientId:        st.ClientID,
		Scopes:          st.Scopes,
		HasRefreshToken: st.HasRefreshToken,
	}
	if !st.Expiry.IsZero() {
		p.ExpiresAtUnixMs = st.Expiry.UnixMilli()
	}
	return p
}
