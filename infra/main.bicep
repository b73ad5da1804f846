// Symbiote on Azure: one resource group holding Azure Functions on Azure Container Apps
// (the custom image, pulled from GitHub Container Registry), its Azure Files share, capped
// monitoring with a workbook, and a monthly budget. Deploy with `azd up`.
targetScope = 'subscription'

@minLength(1)
@maxLength(40)
@description('Name of the azd environment; names the resource group and seeds resource names.')
param environmentName string

@minLength(1)
@description('Azure region for every resource, e.g. eastus, westeurope, swedencentral.')
param location string

@description('The public image to run, published by .github/workflows/image.yml (azd env set SYMBIOTE_IMAGE ghcr.io/<owner>/symbiote:latest).')
param containerImage string = 'ghcr.io/OWNER/symbiote:latest'

@description('true: create an Azure Container Registry (Basic, about 5 USD a month) and let azd build into it instead of using containerImage.')
param useOwnRegistry bool = false

@description('With useOwnRegistry: the image azd built (set by azd after the first deploy); empty on the first provision.')
param apiImageName string = ''

@description('E-mail address for the budget alerts (azd env set SYMBIOTE_BUDGET_EMAIL you@example.com).')
@minLength(3)
param budgetAlertEmail string

@description('Monthly budget for the resource group, in USD; alerts at 50, 90 and 100 % actual and 90 and 100 % forecast.')
@minValue(1)
param budgetAmount int = 2

@description('First day of the budget, yyyy-MM-01; fixed at the first provision (the azd hook stores it), because Azure refuses to change a budget\'s start date. Empty: this month.')
param budgetStartDate string = ''

@description('This month, yyyy-MM-01 (the budget\'s start when budgetStartDate is empty). Leave the default.')
param deployMonth string = utcNow('yyyy-MM-01')

@description('Venom personality variant: default, variant2, ...')
param personality string = 'default'

@description('Extra host names (custom domains) the MCP endpoint answers to, comma-separated.')
param allowedHosts string = ''

@secure()
@description('Owner secret for the OAuth consent page (azd env set SYMBIOTE_OWNER_SECRET ...); empty: API keys only.')
param ownerSecret string = ''

@description('0 scales to zero when idle (cheapest, cold start on the first request); 1 keeps one replica warm.')
@allowed([
  0
  1
])
param minReplicas int = 0

@description('Quota of the Azure Files share holding the memory store, in GiB.')
@minValue(1)
@maxValue(100)
param shareQuotaGiB int = 2

@description('Snapshots of the share to keep (taken daily by the timer function).')
@minValue(1)
@maxValue(200)
param snapshotKeep int = 7

@description('When to snapshot the share: NCRONTAB, six fields, UTC.')
param snapshotSchedule string = '0 0 3 * * *'

var tags = {
  'azd-env-name': environmentName
  app: 'symbiote'
}

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module resources 'resources.bicep' = {
  name: 'symbiote-resources'
  scope: rg
  params: {
    environmentName: environmentName
    location: location
    tags: tags
    containerImage: containerImage
    useOwnRegistry: useOwnRegistry
    imageName: apiImageName
    budgetAlertEmail: budgetAlertEmail
    budgetAmount: budgetAmount
    budgetStartDate: empty(budgetStartDate) ? deployMonth : budgetStartDate
    personality: personality
    allowedHosts: allowedHosts
    ownerSecret: ownerSecret
    minReplicas: minReplicas
    shareQuotaGiB: shareQuotaGiB
    snapshotKeep: snapshotKeep
    snapshotSchedule: snapshotSchedule
  }
}

output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_LOCATION string = location
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = resources.outputs.registryLoginServer
output AZURE_CONTAINER_APPS_ENVIRONMENT_NAME string = resources.outputs.environmentName
output SERVICE_API_NAME string = resources.outputs.appName
output SERVICE_API_ENDPOINT string = resources.outputs.appUrl
output MCP_URL string = resources.outputs.mcpUrl
output HEALTH_URL string = resources.outputs.healthUrl
output APPLICATIONINSIGHTS_NAME string = resources.outputs.appInsightsName
output SYMBIOTE_WORKBOOK_URL string = resources.outputs.workbookUrl
output SYMBIOTE_RUNNING_IMAGE string = resources.outputs.image
output STORAGE_ACCOUNT_NAME string = resources.outputs.storageAccountName
output SHARE_NAME string = resources.outputs.shareName
