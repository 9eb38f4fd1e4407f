# frozen_string_literal: true

module Mailbolt
  VERSION = "0.1.0"
end
