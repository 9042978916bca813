/** Which page under docs/options/ documents which option table. */
import { APISERVER_FLAGS } from './apiserver.js';
import { CONTROLLER_MANAGER_FLAGS } from './controller-manager.js';
import { METRICS_SERVER_FLAGS } from './metrics-server.js';
import { NODEAGENT_FLAGS } from './nodeagent.js';
import { optionDocsPage } from './option-docs.js';
import { PROXY_FLAGS } from './proxy.js';
import { SCHEDULER_FLAGS } from './scheduler.js';
import { SERVER_FLAGS } from './server.js';

export function optionDocsPages(): Array<{ file: string; text: string }> {
  return [
    { file: 'apiserver.md', text: optionDocsPage(APISERVER_FLAGS, 'corectl apiserver options') },
    { file: 'controller-manager.md', text: optionDocsPage(CONTROLLER_MANAGER_FLAGS, 'corectl controller-manager options') },
    { file: 'scheduler.md', text: optionDocsPage(SCHEDULER_FLAGS, 'corectl scheduler options') },
    { file: 'nodeagent.md', text: optionDocsPage(NODEAGENT_FLAGS, 'corectl nodeagent options') },
    { file: 'proxy.md', text: optionDocsPage(PROXY_FLAGS, 'corectl proxy options') },
    { file: 'metrics-server.md', text: optionDocsPage(METRICS_SERVER_FLAGS, 'corectl metrics-server options') },
    { file: 'server.md', text: optionDocsPage(SERVER_FLAGS, 'corectl server options') },
  ];
}
