// Everything Symbiote runs on, in one resource group.
//
// - Azure Functions on Azure Container Apps (Microsoft.App/containerApps, kind functionapp) running
//   the custom image, HTTPS-only ingress, exactly one replica at most (Chroma is single-writer),
//   single revision mode, scale to zero when idle.
// - An Azure Files share (SMB, mounted with nobrl so SQLite works) holding the memory store, with
//   share soft delete; the app snapshots it daily and holds a writer lease on a file in it.
// - Log Analytics (daily ingestion cap, 30-day retention) + workspace-based Application Insights
//   (Entra ID ingestion, no keys, traces sampled at the source), and a workbook over it.
// - A monthly cost budget on this resource group with e-mail alerts.
// - The image comes from a public registry (GitHub Container Registry, published by
//   .github/workflows/image.yml); an own registry (Basic) only when useOwnRegistry is true.
// - One user-assigned identity with only the roles it needs, each scoped as tightly as Azure allows.

@description('azd environment name.')
param environmentName string

@description('Region for every resource.')
param location string = resourceGroup().location

@description('Tags for every resource.')
param tags object = {}

@description('Public image to run (GitHub Container Registry by default); used unless useOwnRegistry is true.')
param containerImage string = 'ghcr.io/OWNER/symbiote:latest'

@description('Build into an own Azure Container Registry (Basic, about 5 USD a month) instead of pulling the public image.')
param useOwnRegistry bool = false

@description('With useOwnRegistry: the image azd built and pushed; empty until then (a stock Functions image stands in).')
param imageName string = ''

@description('Venom personality variant.')
param personality string = 'default'

@description('Custom host names, comma-separated.')
param allowedHosts string = ''

@secure()
@description('Owner secret typed on the OAuth consent page (Claude, ChatGPT connectors); empty: only API keys work.')
param ownerSecret string = ''

@allowed([
  0
  1
])
param minReplicas int = 0

@minValue(1)
@maxValue(100)
param shareQuotaGiB int = 2

@minValue(1)
@maxValue(200)
param snapshotKeep int = 7

param snapshotSchedule string = '0 0 3 * * *'

@description('vCPU per replica.')
param cpu string = '0.5'

@description('Memory per replica (twice the vCPU count, in Gi).')
param memory string = '1Gi'

@description('Days Log Analytics keeps logs (30 is included in the price).')
@minValue(30)
@maxValue(730)
param logRetentionDays int = 30

@description('Daily ingestion cap for logs and telemetry in GB: 0.15 x 31 days stays under the 5 GB a month that Log Analytics does not charge for.')
param logDailyCapGb string = '0.15'

@description('Share of traces (tool-call spans and what they contain) sent to Application Insights, 0 to 1. Metrics are never sampled.')
param traceSamplingRatio string = '0.5'

@description('Monthly budget for this resource group, in the billing currency (USD).')
@minValue(1)
param budgetAmount int = 2

@description('E-mail address the budget alerts go to.')
@minLength(3)
param budgetAlertEmail string

@description('First day of the budget (yyyy-MM-01). Azure does not let a budget\'s start date change, so it is fixed at the first deployment.')
param budgetStartDate string

var token = toLower(uniqueString(subscription().id, resourceGroup().id, environmentName))
var shareName = 'symbiote'
var mountPath = '/mnt/symbiote'
var containerPort = 8080
var placeholderImage = 'mcr.microsoft.com/azure-functions/python:4-python3.11'
// The public image by default; with an own registry, what azd pushed there (a stock image until then).
var image = useOwnRegistry ? (empty(imageName) ? placeholderImage : imageName) : containerImage

// Built-in role definitions.
var roles = {
  acrPull: '7f951dda-4ed3-4680-a7ca-43fe172d538d'
  storageBlobDataOwner: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  storageFileDataPrivilegedContributor: '69566ab7-960f-475b-8e7c-b3118f30c6bd'
  monitoringMetricsPublisher: '3913510d-42f4-4e42-8a64-420c390055eb'
}

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-symbiote-${token}'
  location: location
  tags: tags
}

// -- monitoring ----------------------------------------------------------------------------------

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-symbiote-${token}'
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: logRetentionDays
    workspaceCapping: {
      dailyQuotaGb: json(logDailyCapGb)
    }
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-symbiote-${token}'
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true // telemetry is sent with the identity (Monitoring Metrics Publisher), not a key
    RetentionInDays: 30
    // No ingestion sampling: traces are sampled where they are made (OTEL_TRACES_SAMPLER below,
    // host.json for the Functions host), and metrics and the start-up log line must arrive whole.
    SamplingPercentage: 100
  }
}

// The portal view: tool calls, durations, errors, cold starts and the memory count (infra/workbook.json).
resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, 'symbiote-workbook', token)
  location: location
  tags: union(tags, {
    'hidden-title': 'Symbiote'
  })
  kind: 'shared'
  properties: {
    displayName: 'Symbiote'
    category: 'workbook'
    sourceId: appInsights.id
    version: 'Notebook/1.0'
    // The queries run against this Application Insights resource (classic table names).
    serializedData: replace(loadTextContent('workbook.json'), '__APPINSIGHTS_ID__', appInsights.id)
  }
}

// -- cost guard: a monthly budget on this resource group ---------------------------------------------

resource budget 'Microsoft.Consumption/budgets@2024-08-01' = {
  name: 'budget-symbiote-${token}'
  properties: {
    category: 'Cost'
    amount: budgetAmount
    timeGrain: 'Monthly'
    timePeriod: {
      startDate: budgetStartDate
    }
    notifications: {
      actual50: {
        enabled: true
        operator: 'GreaterThanOrEqualTo'
        threshold: 50
        thresholdType: 'Actual'
        contactEmails: [
          budgetAlertEmail
        ]
      }
      actual90: {
        enabled: true
        operator: 'GreaterThanOrEqualTo'
        threshold: 90
        thresholdType: 'Actual'
        contactEmails: [
          budgetAlertEmail
        ]
      }
      actual100: {
        enabled: true
        operator: 'GreaterThanOrEqualTo'
        threshold: 100
        thresholdType: 'Actual'
        contactEmails: [
          budgetAlertEmail
        ]
      }
      forecast90: {
        enabled: true
        operator: 'GreaterThanOrEqualTo'
        threshold: 90
        thresholdType: 'Forecasted'
        contactEmails: [
          budgetAlertEmail
        ]
      }
      forecast100: {
        enabled: true
        operator: 'GreaterThanOrEqualTo'
        threshold: 100
        thresholdType: 'Forecasted'
        contactEmails: [
          budgetAlertEmail
        ]
      }
    }
  }
}

// -- storage: the memory store's share and the Functions host's own storage -----------------------

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_43: the name is 'stsym' + uniqueString() (13 lowercase letters and digits), 18 characters, which checkov cannot evaluate statically.
  // checkov:skip=CKV_AZURE_33: queue service logging: the app uses no queues.
  name: 'stsym${take(token, 18)}'
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS' // checkov:skip=CKV_AZURE_206: one user's memory; LRS keeps three copies in the region, and daily share snapshots cover mistakes. Use Standard_ZRS for zone redundancy.
  }
  properties: {
    accessTier: 'Hot'
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    allowBlobPublicAccess: false
    // checkov:skip=CKV2_AZURE_40: Container Apps mounts Azure Files over SMB with the account key only; every other access (lease, host storage) uses the managed identity.
    allowSharedKeyAccess: true
    defaultToOAuthAuthentication: true
    allowCrossTenantReplication: false
    // checkov:skip=CKV_AZURE_59: the Consumption Container Apps environment has no fixed egress address or subnet to allow; SMB 3 with encryption and HTTPS-only keep data in transit encrypted.
    // checkov:skip=CKV_AZURE_35: same reason: a deny-by-default network rule would lock the app out of its own share.
    // checkov:skip=CKV2_AZURE_33: a private endpoint needs a VNet-integrated (workload profiles + VNet) environment, out of the free-tier budget; see docs/azure.md for the private setup.
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      defaultAction: 'Allow'
      bypass: 'AzureServices'
    }
    encryption: {
      keySource: 'Microsoft.Storage'
      requireInfrastructureEncryption: true
      services: {
        blob: {
          enabled: true
        }
        file: {
          enabled: true
        }
      }
    }
    // checkov:skip=CKV2_AZURE_1: customer-managed keys need a Key Vault (extra cost and operations); data is encrypted at rest with Microsoft-managed keys, twice (infrastructure encryption).
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    deleteRetentionPolicy: {
      enabled: true
      days: 7
    }
    containerDeleteRetentionPolicy: {
      enabled: true
      days: 7
    }
  }
}

resource fileService 'Microsoft.Storage/storageAccounts/fileServices@2023-05-01' = {
  parent: storage
  name: 'default'
  properties: {
    shareDeleteRetentionPolicy: {
      enabled: true
      days: 14
    }
  }
}

resource share 'Microsoft.Storage/storageAccounts/fileServices/shares@2023-05-01' = {
  parent: fileService
  name: shareName
  properties: {
    shareQuota: shareQuotaGiB
    enabledProtocols: 'SMB'
    accessTier: 'TransactionOptimized'
  }
}

// -- registry (only with useOwnRegistry: the default pulls the public image) ------------------------

resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = if (useOwnRegistry) {
  // checkov:skip=CKV_AZURE_139: azd pushes (and ACR Tasks builds) from outside any VNet; pulls use the identity, no admin user, no anonymous pull.
  // checkov:skip=CKV_AZURE_164: signed images (content trust) need the Premium tier (about 50 USD a month); the image is built from this repository by azd.
  // checkov:skip=CKV_AZURE_165: geo-replication needs Premium; one region is enough for one user's memory.
  // checkov:skip=CKV_AZURE_166: quarantine needs Premium.
  // checkov:skip=CKV_AZURE_167: untagged-manifest retention needs Premium; azd tags every image.
  // checkov:skip=CKV_AZURE_233: zone redundancy needs Premium.
  // checkov:skip=CKV_AZURE_237: dedicated data endpoints need Premium.
  // checkov:skip=CKV_AZURE_163: image vulnerability scanning is Microsoft Defender for Containers, a paid subscription-level plan; enable it there if wanted.
  name: 'crsym${token}'
  location: location
  tags: tags
  sku: {
    name: 'Basic'
  }
  properties: {
    adminUserEnabled: false
    anonymousPullEnabled: false
    publicNetworkAccess: 'Enabled'
  }
}

// -- roles: the least the identity needs ----------------------------------------------------------

// Pull the image from the own registry (none is needed for the public image).
resource acrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (useOwnRegistry) {
  name: guid(registry.id, identity.id, roles.acrPull)
  scope: registry
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.acrPull)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// The Functions host's own storage (AzureWebJobsStorage: timer schedule and singleton locks in
// blobs). Identity-based host storage requires Blob Data Owner; it is not given queue or table rights.
resource hostStorageRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identity.id, roles.storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageBlobDataOwner)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// The writer lease: a file lease on .symbiote/writer.lock through Azure Files OAuth (backup intent).
// Assigned on the account, which holds only this share (Azure Files data-plane roles are not
// evaluated on the ARM id of a share).
resource shareDataRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, identity.id, roles.storageFileDataPrivilegedContributor)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.storageFileDataPrivilegedContributor)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// Snapshots and usage: Azure Files OAuth covers files only, so these go through Microsoft.Storage.
// No built-in role is that narrow (Storage Account Contributor could read the keys): a custom role
// with the share's read/write/delete actions, assigned on this share only.
resource snapshotRoleDefinition 'Microsoft.Authorization/roleDefinitions@2022-04-01' = {
  name: guid(resourceGroup().id, 'symbiote-share-snapshots', token)
  properties: {
    roleName: 'Symbiote share snapshots (${resourceGroup().name}, ${token})'
    description: 'Create, list and delete snapshots of the Symbiote file share and read its usage.'
    type: 'CustomRole'
    permissions: [
      {
        actions: [
          'Microsoft.Storage/storageAccounts/fileServices/shares/read'
          'Microsoft.Storage/storageAccounts/fileServices/shares/write'
          'Microsoft.Storage/storageAccounts/fileServices/shares/delete'
        ]
        notActions: []
      }
    ]
    assignableScopes: [
      resourceGroup().id
    ]
  }
}

resource snapshotRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(share.id, identity.id, 'symbiote-share-snapshots')
  scope: share
  properties: {
    roleDefinitionId: snapshotRoleDefinition.id
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// Send telemetry to Application Insights with the identity (its local auth is off).
resource telemetryRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, identity.id, roles.monitoringMetricsPublisher)
  scope: appInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.monitoringMetricsPublisher)
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// -- the Container Apps environment and the app ----------------------------------------------------

resource environment 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: 'cae-symbiote-${token}'
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: logs.properties.customerId
        sharedKey: logs.listKeys().primarySharedKey
      }
    }
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
    zoneRedundant: false
  }
}

resource environmentShare 'Microsoft.App/managedEnvironments/storages@2024-03-01' = {
  parent: environment
  name: 'symbiote-share'
  properties: {
    azureFile: {
      accountName: storage.name
      accountKey: storage.listKeys().keys[0].value
      shareName: share.name
      accessMode: 'ReadWrite'
    }
  }
}

resource app 'Microsoft.App/containerApps@2024-10-02-preview' = {
  name: 'ca-symbiote-${take(token, 12)}'
  location: location
  tags: union(tags, {
    'azd-service-name': 'api'
  })
  kind: 'functionapp'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    managedEnvironmentId: environment.id
    workloadProfileName: 'Consumption'
    configuration: {
      // Chroma is single-writer: one revision at a time, never two replicas on the share.
      activeRevisionsMode: 'Single'
      maxInactiveRevisions: 3
      ingress: {
        external: true
        targetPort: containerPort
        transport: 'auto'
        allowInsecure: false // HTTP is redirected to HTTPS
        traffic: [
          {
            latestRevision: true
            weight: 100
          }
        ]
      }
      // A public image needs no registry credentials; the own registry is pulled with the identity.
      registries: useOwnRegistry ? [
        {
          server: registry.properties.loginServer
          identity: identity.id
        }
      ] : []
      secrets: empty(ownerSecret) ? [] : [
        {
          name: 'owner-secret'
          value: ownerSecret
        }
      ]
    }
    template: {
      containers: [
        {
          name: 'symbiote'
          image: image
          resources: {
            cpu: json(cpu)
            memory: memory
          }
          env: [
            {
              name: 'FUNCTIONS_WORKER_RUNTIME'
              value: 'python'
            }
            {
              name: 'ASPNETCORE_URLS'
              value: 'http://+:${containerPort}'
            }
            {
              name: 'AzureWebJobsStorage__accountName'
              value: storage.name
            }
            {
              name: 'AzureWebJobsStorage__credential'
              value: 'managedidentity'
            }
            {
              name: 'AzureWebJobsStorage__clientId'
              value: identity.properties.clientId
            }
            {
              name: 'APPLICATIONINSIGHTS_CONNECTION_STRING'
              value: appInsights.properties.ConnectionString
            }
            {
              name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING'
              value: 'Authorization=AAD;ClientId=${identity.properties.clientId}'
            }
            {
              // The Azure Monitor OpenTelemetry exporter's sampler: a fixed share of traces.
              name: 'OTEL_TRACES_SAMPLER'
              value: 'microsoft.fixed_percentage'
            }
            {
              name: 'OTEL_TRACES_SAMPLER_ARG'
              value: traceSamplingRatio
            }
            {
              name: 'AZURE_CLIENT_ID'
              value: identity.properties.clientId
            }
            {
              name: 'HF_HUB_OFFLINE'
              value: '1'
            }
            {
              name: 'LOG_LEVEL'
              value: 'INFO'
            }
            {
              name: 'VENOM_PERSONALITY'
              value: personality
            }
            {
              name: 'SYMBIOTE_ALLOWED_HOSTS'
              value: allowedHosts
            }
            {
              name: 'SYMBIOTE_AUTH'
              value: 'oauth'
            }
            {
              // The secret itself stays in the container app's secret store, never in plain settings.
              name: 'SYMBIOTE_OWNER_SECRET'
              secretRef: empty(ownerSecret) ? null : 'owner-secret'
              value: empty(ownerSecret) ? '' : null
            }
            {
              name: 'SYMBIOTE_SHARE'
              value: 'azure'
            }
            {
              name: 'SYMBIOTE_SHARE_RESOURCE_ID'
              value: share.id
            }
            {
              name: 'SYMBIOTE_SHARE_PATH'
              value: mountPath
            }
            {
              name: 'CHROMADB_PATH'
              value: '${mountPath}/chroma'
            }
            {
              name: 'SYMBIOTE_SNAPSHOT_SCHEDULE'
              value: snapshotSchedule
            }
            {
              name: 'SYMBIOTE_SNAPSHOT_KEEP'
              value: string(snapshotKeep)
            }
            {
              name: 'SYMBIOTE_LEASE_TTL_SECONDS'
              value: '60'
            }
          ]
          volumeMounts: [
            {
              volumeName: 'memory'
              mountPath: mountPath
            }
          ]
          probes: [
            {
              type: 'Startup'
              tcpSocket: {
                port: containerPort
              }
              initialDelaySeconds: 10
              periodSeconds: 10
              failureThreshold: 10 // the Functions host has ~110 s to open its port (10 is the platform's maximum)
            }
            {
              type: 'Liveness'
              tcpSocket: {
                port: containerPort
              }
              periodSeconds: 30
              failureThreshold: 3
            }
          ]
        }
      ]
      scale: {
        minReplicas: minReplicas
        maxReplicas: 1 // never two writers: the writer lease guards this too, at run time
      }
      volumes: [
        {
          name: 'memory'
          storageType: 'AzureFile'
          storageName: environmentShare.name
          // nobrl: SQLite's byte-range locks are not sent to the server (they fail on Azure Files:
          // "database is locked"); safe because only the lease holder writes. The uid/gid match the
          // image's non-root user.
          mountOptions: 'nobrl,mfsymlinks,cache=strict,nosharesock,uid=1000,gid=1000,dir_mode=0770,file_mode=0660'
        }
      ]
    }
  }
  dependsOn: [
    acrPull
    hostStorageRole
    shareDataRole
    snapshotRole
    telemetryRole
  ]
}

output appName string = app.name
output appUrl string = 'https://${app.properties.configuration.ingress.fqdn}'
output mcpUrl string = 'https://${app.properties.configuration.ingress.fqdn}/mcp'
output healthUrl string = 'https://${app.properties.configuration.ingress.fqdn}/health'
output environmentName string = environment.name
output registryLoginServer string = useOwnRegistry ? registry.properties.loginServer : ''
output image string = image
output workbookUrl string = '${az.environment().portal}/#@${tenant().tenantId}/resource${workbook.id}/workbook'
output budgetName string = budget.name
output appInsightsName string = appInsights.name
output storageAccountName string = storage.name
output shareName string = share.name
output identityClientId string = identity.properties.clientId
