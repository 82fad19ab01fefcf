package api

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Login streams the authorization URL, then waits for the redirect and
// sends the outcome. Cancelling the stream abandons the login.
func (s *Server) Login(req *mcpdv1.LoginRequest, stream mcpdv1.Mcpd_LoginServer) error {
	ctx := stream.Context()
	flow, err := s.svc.BeginLogin(ctx, req.GetName(), req.GetScopes())
	if err != nil {
		return err
	}
	if err := stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_AuthorizationUrl{AuthorizationUrl: flow.URL}}); err != nil {
		flow.Close()
		return err
	}
	st, err := s.svc.FinishLogin(ctx, req.GetName(), flow)
	if err != nil {
		return err
	}
	return stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_Done{Done: oauthToProto(st)}})
}

// Logout forgets a remote server's OAuth tokens.
func (s *Server) Logout(ctx context.Context, req *mcpdv1.LogoutRequest) (*mcpdv1.LogoutResponse, error) {
	was, err := s.svc.Logout(req.GetName())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.LogoutResponse{WasLoggedIn: was}, nil
}
