# frozen_string_literal: true

# Mailbolt's Ruby client. Standard library only.
require_relative "mailbolt/version"
require_relative "mailbolt/errors"
require_relative "mailbolt/response"
require_relative "mailbolt/client"
require_relative "mailbolt/resources"
require_relative "mailbolt/webhook"

module Mailbolt
  # Shorthand for Mailbolt::Client.new(**options).
  def self.new(**options) = Client.new(**options)
end
