<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Analytics extends Resource
{
    /**
     * GET /v1/analytics/summary
     *
     * @param array<string, mixed> $params from, to, campaign_id, domain
     */
    public function summary(array $params = []): Response
    {
        return $this->call('GET', '/v1/analytics/summary', $params);
    }
}
