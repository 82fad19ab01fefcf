'use strict';
// @mcpd-dev/client: the client of mcpd for apps and plugins.

const { McpdClient } = require('./client');
const { McpdError } = require('./errors');
const { defaultSocketPath } = require('./socket');
const { Subscription } = require('./subscription');
const { Host } = require('./host');

module.exports = { McpdClient, McpdError, Subscription, Host, defaultSocketPath };
