<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/**
 * A webhook request that failed verification. getHttpStatus() is the answer
 * the receiver should give: 401 for a missing or wrong signature, 400 for a
 * stale timestamp (StaleWebhookException).
 */
class WebhookException extends MailboltException
{
    public function getHttpStatus(): int
    {
        return 401;
    }
}
