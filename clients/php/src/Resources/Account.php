<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Page;
use Mailbolt\Response;

final class Account extends Resource
{
    /** GET /v1/account */
    public function get(): Response
    {
        return $this->call('GET', '/v1/account');
    }

    /**
     * GET /v1/audit-log: one page of the account's changes, newest first.
     *
     * @param array<string, mixed> $params limit, page or cursor
     */
    public function auditLog(array $params = []): Page
    {
        return $this->page('/v1/audit-log', $params);
    }

    /**
     * Every page of the audit log from the one $params selects.
     *
     * @param array<string, mixed> $params
     * @return \Generator<int, Page>
     */
    public function auditLogPages(array $params = []): \Generator
    {
        return $this->walkPages('/v1/audit-log', $params);
    }
}
